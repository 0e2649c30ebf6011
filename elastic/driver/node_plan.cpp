#include "node_plan.hpp"

#include <set>
#include <stdexcept>

namespace riseml::elastic {

JobPlan plan_job(const std::vector<std::string>& nodes, const DriverOptions& options) {
  if (std::set<std::string>(nodes.begin(), nodes.end()).size() != nodes.size())
    throw std::invalid_argument("a node is listed twice in the node list");
  const int have = static_cast<int>(nodes.size());
  const int workers = options.workers.value_or(have);
  if (workers > have)
    throw std::invalid_argument("--workers " + std::to_string(workers) + " needs that many nodes, "
                                "the allocation has " + std::to_string(have) +
                                ": ask sbatch for --nodes=" + std::to_string(workers));
  if (options.min_workers > workers)
    throw std::invalid_argument("--min-workers " + std::to_string(options.min_workers) +
                                " is more than the " + std::to_string(workers) +
                                " nodes that start workers");
  JobPlan plan;
  for (int i = 0; i < have; ++i) {
    if (i >= workers) {
      plan.spares.push_back(nodes[static_cast<std::size_t>(i)]);
      continue;
    }
    plan.workers.push_back(NodePlan{nodes[static_cast<std::size_t>(i)], i, plan.size, options.tasks_per_node});
    plan.size += options.tasks_per_node;
  }
  return plan;
}

std::vector<std::string> srun_command(const NodePlan& node, const DriverOptions& options,
                                      const std::string& job_id) {
  std::vector<std::string> argv{options.srun};
  if (!job_id.empty()) argv.push_back("--jobid=" + job_id);
  // One step per node: when a node dies, only its step ends (a PMIx step of every node would be
  // cancelled as a whole by Slurm), and the others' tasks never hear of it from Slurm.
  for (std::string a : {"--overlap", "--nodes=1", "--mpi=none", "--kill-on-bad-exit=0", "--label"})
    argv.push_back(a);
  argv.push_back("--ntasks=" + std::to_string(node.tasks));
  argv.push_back("--nodelist=" + node.node);
  argv.insert(argv.end(), options.srun_args.begin(), options.srun_args.end());
  argv.insert(argv.end(), options.command.begin(), options.command.end());
  return argv;
}

}  // namespace riseml::elastic
