// A fake Slurm for driving spank_riseml.so's callbacks in a test: the SPANK functions the plugin
// calls, backed by plain data.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

extern "C" {
#include <slurm/spank.h>
}

namespace riseml::spank::test {

struct FakeSlurm {
  spank_context_t context = S_CTX_REMOTE;
  std::map<std::string, std::string> env;  // the job's environment
  std::uint32_t step_id = 0;
  std::uint32_t job_id = 4242;
  std::uint32_t local_tasks = 1;
  std::uint32_t node_id = 0;
  int task_id = 0;
  std::uint32_t nnodes = 1;
  std::uint32_t total_tasks = 0;      // 0: local_tasks (a one-node step)
  std::uint32_t first_global_id = 0;  // S_TASK_GLOBAL_ID = first_global_id + task_id (block)
  std::map<int, std::uint32_t> global_id_of;  // overrides by local task id (other distributions)
  std::vector<spank_option> options;  // registered
  std::vector<std::string> errors;    // slurm_error
  std::vector<std::string> user_log;  // slurm_spank_log
};

FakeSlurm& fake();
void reset_fake();

}  // namespace riseml::spank::test
