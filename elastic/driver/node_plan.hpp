// Which nodes run workers, with which ranks, and the srun line that starts each node's step.
#pragma once

#include "driver_options.hpp"

#include <string>
#include <vector>

namespace riseml::elastic {

struct NodePlan {
  std::string node;
  int node_id = 0;
  int rank_base = 0;  // job rank of the node's first task
  int tasks = 1;
};

struct JobPlan {
  std::vector<NodePlan> workers;
  std::vector<std::string> spares;  // nodes of the allocation that start no workers
  int size = 0;                     // ranks in the first world
};

// Throws std::invalid_argument saying how to fix it when the allocation has fewer nodes than
// --workers or --min-workers asks for, or a node is listed twice.
JobPlan plan_job(const std::vector<std::string>& nodes, const DriverOptions& options);

// srun --overlap ... --nodelist=<node> --ntasks=<tasks> --mpi=none ... program args
// (`job_id` empty: no --jobid, as in tests with a stand-in srun).
std::vector<std::string> srun_command(const NodePlan& node, const DriverOptions& options,
                                      const std::string& job_id);

}  // namespace riseml::elastic
