// The srun line that starts one node's workers as a step of the running job.
#pragma once

#include "driver_options.hpp"
#include "world_planner.hpp"

#include <string>
#include <vector>

namespace riseml::elastic {

// srun --overlap ... --nodelist=<host> --ntasks=<count> --mpi=none ... program args
// (`job_id` empty: no --jobid, as in tests with a stand-in srun).
std::vector<std::string> srun_command(const StartWorkers& workers, const DriverOptions& options,
                                      const std::string& job_id);

}  // namespace riseml::elastic
