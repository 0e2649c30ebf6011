// Logging refused connections without letting strangers flood the log: the first few are
// written whole, after that at most one summary line per interval with the count and the
// latest reason, and a last summary when setup ends. A thousand connect-and-close attempts
// cost a handful of lines, and the admin still learns how many there were and from where.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace riseml {

class RefusalLog {
 public:
  using Clock = std::chrono::steady_clock;

  RefusalLog(int rank, std::FILE* out = stderr, int shown_whole = 3,
             Clock::duration interval = std::chrono::seconds(10));
  ~RefusalLog();  // writes the summary of what was not shown yet

  void refused(const std::string& why);
  int total() const { return total_; }

 private:
  void summarize(const char* when);

  int rank_;
  std::FILE* out_;
  int shown_whole_;
  Clock::duration interval_;
  int total_ = 0;
  int unreported_ = 0;  // refused since the last line written
  std::string latest_;
  Clock::time_point last_line_{};
};

}  // namespace riseml
