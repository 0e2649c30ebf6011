// What a rank's wait status means to a user and to the launcher's own exit status.
#pragma once

#include <string>

namespace riseml::launch {

// "exited with status 1", "was killed by signal 9 (Killed)".
std::string describe_wait_status(int wait_status);

// The shell's convention: the exit code, or 128 + signal number.
int exit_code_of(int wait_status);

// Non-zero exit or death by a signal.
bool is_failure(int wait_status);

}  // namespace riseml::launch
