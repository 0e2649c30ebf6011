// slurmstepd (remote context): plan once per node in user_init, apply per task in task_init.
#pragma once

#include "spank_slurm.hpp"

namespace riseml::spank {

int stepd_init_post_opt(spank_t sp);
int stepd_user_init(spank_t sp);
int stepd_task_init(spank_t sp);

}  // namespace riseml::spank
