#include "exit_status.hpp"

#include <string.h>  // strsignal
#include <sys/wait.h>

namespace riseml::launch {

std::string describe_wait_status(int wait_status) {
  if (WIFEXITED(wait_status)) {
    return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  }
  if (WIFSIGNALED(wait_status)) {
    int signal_number = WTERMSIG(wait_status);
    const char* name = strsignal(signal_number);
    return "was killed by signal " + std::to_string(signal_number) + " (" +
           (name != nullptr ? name : "unknown") + ")" +
           (WCOREDUMP(wait_status) ? ", core dumped" : "");
  }
  return "ended with wait status " + std::to_string(wait_status);
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

bool is_failure(int wait_status) {
  return !(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0);
}

}  // namespace riseml::launch
