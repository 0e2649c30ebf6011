#include "process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cerrno>
#include <chrono>
#include <cstdlib>

namespace riseml::cli {

namespace {

void close_pair(int p[2]) {
  if (p[0] >= 0) close(p[0]);
  if (p[1] >= 0) close(p[1]);
}

}  // namespace

ProcessResult run_program(const std::vector<std::string>& argv, const std::string& input,
                          const std::string& dir, bool capture_stderr, double timeout_s) {
  ProcessResult result;
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (argv.empty() || pipe(in_pipe) != 0 || pipe(out_pipe) != 0 ||
      (capture_stderr && pipe(err_pipe) != 0)) {
    close_pair(in_pipe);
    close_pair(out_pipe);
    close_pair(err_pipe);
    result.error = "cannot create a pipe";
    return result;
  }
  pid_t pid = fork();
  if (pid < 0) {
    close_pair(in_pipe);
    close_pair(out_pipe);
    close_pair(err_pipe);
    result.error = "fork failed";
    return result;
  }
  if (pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    if (capture_stderr) dup2(err_pipe[1], 2);
    close_pair(in_pipe);
    close_pair(out_pipe);
    close_pair(err_pipe);
    if (!dir.empty() && chdir(dir.c_str()) != 0) _exit(126);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (capture_stderr) close(err_pipe[1]);
  // The input is small (a script); the child reads all of it before it prints much.
  size_t written = 0;
  while (written < input.size()) {
    ssize_t n = write(in_pipe[1], input.data() + written, input.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  close(in_pipe[1]);
  // Read stdout and stderr together, so neither pipe fills up and blocks the child.
  struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {capture_stderr ? err_pipe[0] : -1, POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = capture_stderr ? 2 : 1;
  char buf[65536];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  bool timed_out = false;
  while (open_fds > 0) {
    int wait_ms = -1;
    if (timeout_s > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        kill(pid, SIGKILL);
        timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(left.count());
    }
    int ready = poll(fds, 2, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    result.status = 124;
    result.error = argv[0] + " did not finish within " + std::to_string(static_cast<int>(timeout_s)) + " s";
    return result;
  }
  if (WIFEXITED(status)) {
    result.status = WEXITSTATUS(status);
    if (result.status == 127) result.error = "cannot run " + argv[0] + " (is Slurm installed?)";
    if (result.status == 126) result.error = "cannot enter " + dir;
  } else {
    result.status = 128 + WTERMSIG(status);
  }
  return result;
}

std::string program_from_env(const char* env, const char* fallback) {
  const char* v = std::getenv(env);
  return v && *v ? v : fallback;
}

}  // namespace riseml::cli
