// A child program whose standard output (and error, when asked) comes back on a pipe: the
// driver starts scontrol and each node's srun this way. No shell: each argument is one word.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace riseml::elastic {

struct PipedChild {
  pid_t pid = -1;
  int output = -1;  // read end; the caller closes it
};

// `environment`: "NAME=value" strings, or empty for this process's own. `own_group`: the child
// leads a process group of its own, so that kill(-pid, ...) reaches whatever it started too.
// Throws std::runtime_error when the pipe or the fork fails; a program that cannot be run exits
// 127 after saying so on the pipe.
PipedChild start_piped(const std::vector<std::string>& argv,
                       const std::vector<std::string>& environment, bool with_stderr,
                       bool own_group = false);

}  // namespace riseml::elastic
