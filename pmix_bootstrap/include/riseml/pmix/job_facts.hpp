// Where this process sits in its job, as the launcher (srun, riseml-launch, mpirun) describes it.
#pragma once

#include <string>

namespace riseml::pmix {

struct JobFacts {
  int rank = 0;        // 0 .. size-1, unique in the job
  int size = 1;        // processes in the job
  int local_rank = 0;  // 0 .. local_size-1 among this job's processes on this node
  int local_size = 1;  // this job's processes on this node
  int node_rank = 0;   // rank among all jobs' processes on this node (usually local_rank)
  int node_id = 0;     // 0 .. num_nodes-1
  int num_nodes = 1;
  std::string hostname;
  std::string nspace;  // the PMIx namespace of the job
  std::string job_id;  // the launcher's job id (Slurm job id, mpirun jobid); the nspace if none
};

}  // namespace riseml::pmix
