#include "timeline.hpp"

#include <riseml/collective_error.hpp>

#include <cerrno>
#include <cstring>

namespace riseml::engine {

namespace {
std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}
}  // namespace

Timeline::~Timeline() { close(); }

void Timeline::open(const std::string& path) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_)
    throw CollectiveError(ErrorKind::system,
                          "riseml: cannot write the timeline " + path + ": " + std::strerror(errno));
  origin_ = Clock::now();
  rows_.clear();  // a reopened timeline names its rows again
  first_ = true;
  std::fputs("[\n", file_);
}

int Timeline::row(const std::string& tensor) {
  auto [it, inserted] = rows_.emplace(tensor, static_cast<int>(rows_.size()) + 1);
  if (inserted) {
    std::fprintf(file_,
                 "%s{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": %d, "
                 "\"args\": {\"name\": \"%s\"}}",
                 first_ ? "" : ",\n", it->second, json_escape(tensor).c_str());
    first_ = false;
  }
  return it->second;
}

void Timeline::event(const std::string& tensor, const char* phase, Clock::time_point start,
                     Clock::time_point end, std::size_t bytes) {
  if (!file_) return;
  const int tid = row(tensor);
  using us = std::chrono::microseconds;
  const auto ts = std::chrono::duration_cast<us>(start - origin_).count();
  const auto dur = std::chrono::duration_cast<us>(end - start).count();
  std::fprintf(file_,
               ",\n{\"name\": \"%s\", \"ph\": \"X\", \"pid\": 0, \"tid\": %d, \"ts\": %lld, "
               "\"dur\": %lld, \"args\": {\"bytes\": %zu}}",
               phase, tid, static_cast<long long>(ts), static_cast<long long>(dur), bytes);
}

void Timeline::close() {
  if (!file_) return;
  std::fputs("\n]\n", file_);
  std::fclose(file_);
  file_ = nullptr;
}

}  // namespace riseml::engine
