// The command line of riseml-launch:
//   riseml-launch -n N [--tag-output] [--timeout S] [--stop-grace S] [--] program args...
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace riseml::launch {

struct LaunchOptions {
  int ranks = 0;
  bool tag_output = false;
  std::optional<std::chrono::milliseconds> timeout;                // whole-job wall clock limit
  std::chrono::milliseconds stop_grace = std::chrono::seconds(5);  // SIGTERM -> SIGKILL
  std::vector<std::string> command;                                // program and its arguments
};

// `args` excludes the program name. Returns the options, or the exit code to end with after
// CLI11 printed help (0) or a usage error (2) on stdout/stderr.
std::variant<LaunchOptions, int> parse_launch_options(const std::vector<std::string>& args);

}  // namespace riseml::launch
