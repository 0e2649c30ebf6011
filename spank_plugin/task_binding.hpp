// Binds the calling process (a task, just before exec) to CPUs and NUMA nodes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plugin_config.hpp"

namespace riseml::spank {

// The CPUs this process may run on (the step's: slurmstepd's affinity). nullopt on failure.
std::optional<std::vector<unsigned>> current_cpus();

// Empty string on success, else what failed.
std::string bind_cpus(const std::vector<unsigned>& cpus);
std::string bind_memory(const std::vector<unsigned>& numa_nodes, MemBind how);

}  // namespace riseml::spank
