// The plugin's command-line options (srun, sbatch, salloc), in one table.
#pragma once

#include "spank_slurm.hpp"

namespace riseml::spank {

// Registers every option; false (after slurm_error) when Slurm refuses one.
bool register_options(spank_t sp);

}  // namespace riseml::spank
