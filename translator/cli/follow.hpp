// The output of a riseml job's experiments, each line prefixed with the experiment and the
// rank (srun --label in the generated script writes "RANK: " before each line of a run step):
// printed once (riseml logs), or followed until the job ends (logs -f, submit --follow).
#pragma once

#include <string>

#include "../slurm_jobs.hpp"

namespace riseml::cli {

// "3: text" (srun --label, padded with spaces for wide jobs) -> "[12.1 r3] text";
// a line without a label (the batch script's own) -> "[12.1] text".
std::string prefixed_line(const std::string& experiment, const std::string& line);

struct FollowOptions {
  bool follow = false;         // keep reading until the job ends
  bool report_states = false;  // print state changes on stderr (submit --follow)
};

// Prints the output of `ref` (a job, or one experiment) on stdout. Returns the exit status:
// without follow 0 (or 2 for a bad id), with follow the job's exit status once it ended.
int show_logs(const JobRef& ref, const FollowOptions& options);

}  // namespace riseml::cli
