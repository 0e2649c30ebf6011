// torch.distributed's variables for one task of a Slurm step, so that init_process_group("nccl"
// or "gloo") with env:// works under plain srun, with no torchrun: RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, and MASTER_ADDR/MASTER_PORT (the step's first node, a port every task
// derives alike from the job and step ids, as no task can tell the others one). Pure: the SPANK
// glue (spank_stepd.cpp) gathers the facts in task_init.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace riseml::spank {

struct TorchTaskFacts {
  std::uint32_t global_id = 0;    // S_TASK_GLOBAL_ID
  std::uint32_t total_tasks = 0;  // S_JOB_TOTAL_TASK_COUNT (the step's)
  std::uint32_t local_id = 0;     // S_TASK_ID
  std::uint32_t local_tasks = 0;  // S_JOB_LOCAL_TASK_COUNT
  std::uint32_t job_id = 0;       // S_JOB_ID
  std::uint32_t step_id = 0;      // S_JOB_STEPID
  std::optional<std::string> step_nodelist;  // SLURM_STEP_NODELIST, e.g. "rml[1-3]"
  // What the step inherited: a user's own choice is kept.
  std::optional<std::string> master_addr;  // MASTER_ADDR
  std::optional<std::string> master_port;  // MASTER_PORT
};

struct TorchEnvironment {
  std::vector<std::pair<std::string, std::string>> env;  // in the order to set them
  std::string not_set;  // why MASTER_ADDR is missing; empty when all are set
};

TorchEnvironment torch_environment(const TorchTaskFacts& facts);

// The first host of a Slurm host list ("rml[1-3],gpu7" -> "rml1", "n[007-9]" -> "n007");
// nullopt when it is malformed.
std::optional<std::string> first_host(std::string_view nodelist);

// The port the step's tasks agree on: 20000 + (job_id * 131 + step_id) mod 20000. The Python
// package (riseml.torch.distributed) derives it the same way under srun without PMIx.
std::uint32_t derived_master_port(std::uint32_t job_id, std::uint32_t step_id);

}  // namespace riseml::spank
