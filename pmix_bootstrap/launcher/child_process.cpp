#include "child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "wake_pipe.hpp"

namespace riseml::launch {

namespace {

struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};

Pipe make_pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Runs in the forked child of a multi-threaded process: async-signal-safe calls only.
[[noreturn]] void become_rank(const char* path, char* const* argv, char* const* environment,
                              pid_t launcher, int stdin_fd, int stdout_fd, int stderr_fd,
                              int exec_error_fd, const sigset_t& original_mask) {
  WakePipe::restore_default_signals();
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != launcher) _exit(127);  // the launcher died before prctl took effect
  if (dup2(stdin_fd, STDIN_FILENO) < 0 || dup2(stdout_fd, STDOUT_FILENO) < 0 ||
      dup2(stderr_fd, STDERR_FILENO) < 0) {
    int error = errno;
    [[maybe_unused]] ssize_t ignored = write(exec_error_fd, &error, sizeof error);
    _exit(127);
  }
  sigprocmask(SIG_SETMASK, &original_mask, nullptr);
  execve(path, argv, environment);
  int error = errno;
  [[maybe_unused]] ssize_t ignored = write(exec_error_fd, &error, sizeof error);
  _exit(127);
}

}  // namespace

StartedChild start_child(const std::string& program_path, const std::vector<std::string>& argv,
                         char** environment) {
  std::vector<char*> argv_pointers;
  for (const std::string& argument : argv)
    argv_pointers.push_back(const_cast<char*>(argument.c_str()));
  argv_pointers.push_back(nullptr);

  UniqueFd dev_null(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!dev_null) throw std::system_error(errno, std::generic_category(), "open /dev/null");
  Pipe out = make_pipe();
  Pipe err = make_pipe();
  Pipe exec_status = make_pipe();

  // Signals stay blocked across fork so the child cannot run the launcher's handlers before it
  // restored the defaults.
  sigset_t all, original_mask;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &original_mask);
  pid_t launcher = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    become_rank(program_path.c_str(), argv_pointers.data(), environment, launcher, dev_null.get(),
                out.write_end.get(), err.write_end.get(), exec_status.write_end.get(),
                original_mask);
  }
  int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &original_mask, nullptr);
  if (pid < 0) throw std::system_error(fork_errno, std::generic_category(), "fork");

  // Also from this side, so the group exists before anyone signals it.
  setpgid(pid, pid);
  exec_status.write_end.reset();
  out.write_end.reset();
  err.write_end.reset();

  int exec_errno = 0;
  ssize_t got;
  do {
    got = read(exec_status.read_end.get(), &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    waitpid(pid, nullptr, 0);
    throw std::system_error(exec_errno, std::generic_category(), "cannot execute " + program_path);
  }
  return {pid, std::move(out.read_end), std::move(err.read_end)};
}

}  // namespace riseml::launch
