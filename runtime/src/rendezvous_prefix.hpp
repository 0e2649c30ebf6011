// The rendezvous keys of the runtime's communicators: each generation (an init() after a
// shutdown() reuses the bootstrap session, which PMIx cannot start twice) and each process set
// sets up under keys of its own, so that no two setups read each other's endpoints.
#pragma once

#include <string>

namespace riseml::runtime {

// "riseml" for the first generation (what a communicator uses by default), "riseml.g<N>" after.
std::string job_rendezvous_prefix(int generation);
std::string process_set_rendezvous_prefix(int generation, int process_set);

}  // namespace riseml::runtime
