// What the plugin keeps between SPANK callbacks in one process (srun, sbatch or slurmstepd).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "planner.hpp"
#include "plugin_config.hpp"

namespace riseml::spank {

struct PluginState {
  PluginConfig config;
  std::optional<BindRequest> user_bind;  // --riseml-bind, when given
  BindRequest bind;                      // what this step does (user's choice, else default=)
  bool active = false;                   // a plan was made for this step
  std::vector<placement::TaskPlan> plans;
  std::string hostname;
};

PluginState& state();
void reset_state();  // frees everything (slurm_spank_exit)

// The plugstack.conf arguments; false (after slurm_error) when they are wrong.
bool load_config(int argc, char** argv);

}  // namespace riseml::spank
