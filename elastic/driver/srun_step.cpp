#include "srun_step.hpp"

namespace riseml::elastic {

std::vector<std::string> srun_command(const StartWorkers& workers, const DriverOptions& options,
                                      const std::string& job_id) {
  std::vector<std::string> argv{options.srun};
  if (!job_id.empty()) argv.push_back("--jobid=" + job_id);
  // One step per node: when a node dies, only its step ends (a PMIx step of every node would be
  // cancelled as a whole by Slurm), and the others' tasks never hear of it from Slurm.
  for (std::string a : {"--overlap", "--nodes=1", "--mpi=none", "--kill-on-bad-exit=0", "--label"})
    argv.push_back(a);
  argv.push_back("--ntasks=" + std::to_string(workers.count));
  argv.push_back("--nodelist=" + workers.host);
  argv.insert(argv.end(), options.srun_args.begin(), options.srun_args.end());
  argv.insert(argv.end(), options.command.begin(), options.command.end());
  return argv;
}

}  // namespace riseml::elastic
