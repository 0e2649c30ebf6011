// riseml logs ID [-f]: the output of a job (of each experiment of a sweep), every line prefixed
// with the experiment and rank; -f follows it until the job ends and exits with its status.
#include <iostream>

#include "commands.hpp"
#include "follow.hpp"
#include "slurm_client.hpp"

namespace riseml::cli {

int logs(const std::string& id_text, bool follow) {
  std::string error;
  auto ref = job_ref_or_error(id_text, error);
  if (!ref) {
    std::cerr << "riseml: " << error << '\n';
    return kExitBadInput;
  }
  return show_logs(*ref, FollowOptions{.follow = follow, .report_states = false});
}

}  // namespace riseml::cli
