// riseml logs ID [-f]: the output of a job (of each experiment of a sweep), every line prefixed
// with the experiment and rank; -f follows it until the job ends and exits with its status.
#include <iostream>

#include "commands.hpp"
#include "follow.hpp"
#include "slurm_client.hpp"

namespace riseml::cli {

int logs(const std::string& id_text, bool follow) {
  std::optional<JobRef> ref;
  if (!job_ref_argument(id_text, /*optional=*/false, ref)) return kExitBadInput;
  return show_logs(*ref, FollowOptions{.follow = follow, .report_states = false});
}

}  // namespace riseml::cli
