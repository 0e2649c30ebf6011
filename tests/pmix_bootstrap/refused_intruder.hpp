// The trigger of the libpmix 4.2.2 deadlock, for the tests that need the real thing: a process
// of another user (nobody) that starts a PMIx client with the PMIX_* environment of one of a
// job's ranks, claiming to be that rank. The server refuses it, correctly, and its progress
// thread then hangs for good. Needs root (to become nobody).
#pragma once

#include <chrono>
#include <string>

#include "spawned_process.hpp"

namespace riseml::testing {

inline constexpr OtherUser kNobody{65534, 65534};

// Waits up to `timeout` for `path` to exist.
bool wait_for_file(const std::string& path, std::chrono::milliseconds timeout);

// A rank's shell command that writes its environment to `env_file` (rank 0 only, atomically,
// for run_intruder) and then waits until `go_file` exists.
std::string write_environment_then_wait(const std::string& env_file, const std::string& go_file);

// Runs riseml_pmix_intruder_helper as nobody with the PMIX_* variables in `env_file` (as `env`
// wrote them) on top of this environment without any launcher's variables. Its stdout is
// "refused\n" when the server kept it out.
ProcessResult run_intruder(const std::string& env_file);

}  // namespace riseml::testing
