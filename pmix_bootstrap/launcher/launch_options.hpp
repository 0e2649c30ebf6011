// The command line of riseml-launch:
//   riseml-launch -n N [--tag-output] [--timeout S] [--stop-grace S] [--finalize-timeout S]
//                 [--pmix-stall-timeout S] [--] program args...
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
  // Elastic training: a rank that fails does not stop the others (they re-form their world);
  // the job fails only when every rank failed.
  bool elastic = false;
  std::optional<std::chrono::milliseconds> timeout;                // whole-job wall clock limit
  std::chrono::milliseconds stop_grace = std::chrono::seconds(5);  // SIGTERM -> SIGKILL
  std::vector<std::string> command;                                // program and its arguments
  // How long the PMIx server may take to shut down after every rank exited 0.
  std::chrono::milliseconds finalize_timeout = std::chrono::seconds(5);
  // How long the PMIx server may leave a request of the stall check unanswered before the
  // job is stopped (see server_stall_watch.hpp); nullopt: no check.
  std::optional<std::chrono::milliseconds> pmix_stall_timeout = std::chrono::seconds(10);
};

// `args` excludes the program name. Returns the options, or the exit code to end with after
// CLI11 printed help (0) or a usage error (2) on stdout/stderr.
std::variant<LaunchOptions, int> parse_launch_options(const std::vector<std::string>& args);

}  // namespace riseml::launch
