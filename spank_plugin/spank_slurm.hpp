// slurm/spank.h for C++: C linkage, and the step ids the plugin never touches.
#pragma once

extern "C" {
#include <slurm/spank.h>
}

#include <cstdint>

namespace riseml::spank {

// Batch script, extern, interactive and pending steps: 0xfffffffa and above (slurm.h).
constexpr std::uint32_t first_special_step = 0xfffffffaU;

}  // namespace riseml::spank
