// The timeline: Chrome trace events (chrome://tracing, Perfetto), one row per tensor name, with
// its phases as complete ("X") events: NEGOTIATE (enqueued until ready on every rank), QUEUE
// (ready until its turn), MEMCPY_IN_FUSION_BUFFER, the collective (ALLREDUCE, BROADCAST,
// ALLGATHER, BARRIER), MEMCPY_OUT_FUSION_BUFFER. Written by the engine thread only.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <unordered_map>

namespace riseml::engine {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;

  Timeline() = default;
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Throws CollectiveError(system) when the file cannot be created.
  void open(const std::string& path);
  bool enabled() const { return file_ != nullptr; }
  void event(const std::string& tensor, const char* phase, Clock::time_point start,
             Clock::time_point end, std::size_t bytes = 0);
  void close();

 private:
  int row(const std::string& tensor);
  std::FILE* file_ = nullptr;
  Clock::time_point origin_;
  std::unordered_map<std::string, int> rows_;
  bool first_ = true;
};

}  // namespace riseml::engine
