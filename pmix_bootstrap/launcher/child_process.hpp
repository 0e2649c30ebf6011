// Starts one rank: fork, then exec of a resolved path, with stdout/stderr on pipes, stdin on
// /dev/null, its own process group (so stopping it also stops what it started) and SIGKILL
// when the launcher dies (so a killed launcher leaves no ranks behind).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "unique_fd.hpp"

namespace riseml::launch {

struct StartedChild {
  pid_t pid = -1;
  UniqueFd stdout_pipe;
  UniqueFd stderr_pipe;
};

// Returns once the child has exec'd; throws std::system_error when fork or exec fails (the
// exec error is reported back through a close-on-exec pipe).
StartedChild start_child(const std::string& program_path, const std::vector<std::string>& argv,
                         char** environment);

}  // namespace riseml::launch
