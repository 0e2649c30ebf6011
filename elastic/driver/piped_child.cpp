#include "piped_child.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace riseml::elastic {

PipedChild start_piped(const std::vector<std::string>& argv,
                       const std::vector<std::string>& environment, bool with_stderr,
                       bool own_group) {
  // Everything the child needs is built before fork (a multi-threaded parent's child may only
  // make async-signal-safe calls).
  std::vector<std::string> words = argv, env = environment;
  std::vector<char*> args, envp;
  for (auto& s : words) args.push_back(s.data());
  args.push_back(nullptr);
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  char** child_env = env.empty() ? environ : envp.data();
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2 failed: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out[0]);
    ::close(out[1]);
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    if (own_group) ::setpgid(0, 0);
    ::dup2(out[1], STDOUT_FILENO);
    if (with_stderr) ::dup2(out[1], STDERR_FILENO);
    ::execvpe(args[0], args.data(), child_env);
    const char* why = std::strerror(errno);
    const char prefix[] = "riseml-elastic: cannot run ";
    (void)!::write(out[1], prefix, sizeof prefix - 1);
    (void)!::write(out[1], args[0], std::strlen(args[0]));
    (void)!::write(out[1], ": ", 2);
    (void)!::write(out[1], why, std::strlen(why));
    (void)!::write(out[1], "\n", 1);
    ::_exit(127);
  }
  ::close(out[1]);
  return PipedChild{pid, out[0]};
}

}  // namespace riseml::elastic
