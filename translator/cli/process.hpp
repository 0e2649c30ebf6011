// Running Slurm's programs (sbatch, squeue, sacct, scancel, srun) as argv, never through a
// shell, so nothing a user typed is ever parsed as shell text.
#pragma once

#include <string>
#include <vector>

namespace riseml::cli {

struct ProcessResult {
  int status = -1;    // exit status, 128 + signal when killed
  std::string out;    // stdout
  std::string err;    // stderr, when captured
  std::string error;  // why it could not run at all (then status is 126/127)
};

// Runs argv in `dir` (empty: here) with `input` on stdin and stdout captured. stderr is
// captured when `capture_stderr`, else it passes through to ours.
// With `timeout_s` > 0 the program is killed (SIGKILL) when it runs longer; status is then 124.
ProcessResult run_program(const std::vector<std::string>& argv, const std::string& input = "",
                          const std::string& dir = "", bool capture_stderr = false,
                          double timeout_s = 0);

// $ENV when set and not empty (a test's fake program), else `fallback`.
std::string program_from_env(const char* env, const char* fallback);

}  // namespace riseml::cli
