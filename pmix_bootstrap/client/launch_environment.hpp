// How this process was started, judged from its environment alone (pure, so it can be tested):
// under a PMIx server, alone, or as one of several tasks of a launcher that gave it no PMIx.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace riseml::pmix {

using EnvironmentLookup = std::function<const char*(const char* name)>;

struct LaunchEnvironment {
  bool has_pmix_server = false;
  // Set when a launcher evidently started several tasks without PMIx, e.g.
  // "srun started 4 tasks (SLURM_STEP_NUM_TASKS=4)".
  std::optional<std::string> sibling_tasks_without_pmix;
};

LaunchEnvironment inspect_launch_environment(const EnvironmentLookup& getenv);

// Who this process is in messages from before PMIx told it: "rank 3 on host n1" (PMIX_RANK,
// as its launcher set it), or "the process on host n1" without one.
std::string rank_before_connecting(const EnvironmentLookup& getenv, const std::string& hostname);

// The sentence every "cannot find the peers" error ends with.
std::string how_to_start_hint();

}  // namespace riseml::pmix
