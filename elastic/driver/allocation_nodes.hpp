// The nodes of this Slurm allocation, in Slurm's order: `scontrol show hostnames` of
// SLURM_JOB_NODELIST (the hostlist syntax, rml[1-3,5], is Slurm's to expand).
#pragma once

#include <string>
#include <vector>

namespace riseml::elastic {

// Throws std::runtime_error saying why (scontrol missing, failing, or listing nothing).
std::vector<std::string> allocation_nodes(const std::string& nodelist);

}  // namespace riseml::elastic
