// Runs a program as a child process that cannot hang or flood its caller: no shell, stdin
// /dev/null, no inherited descriptors, working directory /, default signal handling, a time
// limit after which it is killed (SIGKILL) and reaped, and a cap on what it may print. Used in
// slurmstepd, so it never throws and never waits without a bound.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace riseml::placement {

struct ChildLimits {
  std::chrono::milliseconds timeout{30000};
  std::size_t max_stdout = 16u << 20;    // more is an error (too_much_output), the child is killed
  std::size_t max_stderr_kept = 4096;    // more is read and dropped
};

struct ChildResult {
  enum class Ending {
    exited,           // exit_code
    signaled,         // signal: it crashed or was killed by someone else
    timed_out,        // killed at the time limit
    too_much_output,  // killed after max_stdout bytes
    not_started,      // error: errno of posix_spawn (ENOENT, EACCES, ...) or of setting it up
    lost,             // error: errno of waitpid (someone else reaped it)
  };
  Ending ending = Ending::not_started;
  int exit_code = -1;
  int signal = 0;
  int error = 0;
  std::string out;  // all of stdout (up to max_stdout)
  std::string err;  // the start of stderr
};

// argv[0] is the program's absolute path (no PATH search). The environment is the caller's.
ChildResult run_bounded(const std::vector<std::string>& argv, const ChildLimits& limits) noexcept;

}  // namespace riseml::placement
