// How long PMIx_Init may take before init() gives up: InitOptions::pmix_init_timeout when the
// program set it, else RISEML_PMIX_INIT_TIMEOUT_S (whole seconds), else 60 s. PMIx_Init only
// connects to the local PMIx server (srun's slurmstepd, riseml-launch, mpirun's daemon) and
// reads the job's data, which takes well under a second; a minute leaves room for a node
// starting many ranks at once, and a server that has not answered by then never will.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "launch_environment.hpp"

namespace riseml::pmix {

inline constexpr std::chrono::milliseconds kDefaultPmixInitTimeout = std::chrono::seconds(60);

// Throws BootstrapError naming `who` (rank_before_connecting) when RISEML_PMIX_INIT_TIMEOUT_S
// is not a whole number of seconds from 1 to 604800 (a week).
std::chrono::milliseconds pmix_init_timeout(std::optional<std::chrono::milliseconds> option,
                                            const EnvironmentLookup& getenv,
                                            const std::string& who);

}  // namespace riseml::pmix
