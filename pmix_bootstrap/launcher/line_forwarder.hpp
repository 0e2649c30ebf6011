// Cuts a rank's output stream into whole lines, optionally prefixed with "[rank] ", and hands
// them on in batches of whole lines, so lines of different ranks never mix.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace riseml::launch {

class LineForwarder {
 public:
  using Sink = std::function<void(std::string_view whole_lines)>;

  // A line longer than `max_line` bytes is passed on in pieces of that size, each as a line:
  // the launcher must not buffer without bound.
  LineForwarder(std::string prefix, Sink sink, std::size_t max_line = 64 * 1024);

  void feed(std::string_view chunk);
  // End of stream: a last line without '\n' is passed on with one.
  void finish();

 private:
  void append_line(std::string& batch, std::string_view line) const;

  std::string prefix_;
  Sink sink_;
  std::size_t max_line_;
  std::string partial_;
};

}  // namespace riseml::launch
