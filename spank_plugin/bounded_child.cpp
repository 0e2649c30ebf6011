#include "bounded_child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <thread>

extern char** environ;

namespace riseml::placement {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long a killed child may take to be reaped. SIGKILL cannot be caught, but a process in an
// uninterruptible wait (a hung NFS read) dies only when that ends: then we leave it behind
// rather than wait for it.
constexpr milliseconds reap_grace{2000};

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// A pipe whose ends are close-on-exec and numbered 3 or above, so the child's dup2 onto 0-2
// never meets one of them (slurmstepd may run with 0-2 closed). Our end does not block: the
// loop below polls it.
bool make_pipe(Fd& read_end, Fd& write_end) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return false;
  const Fd low_r(p[0]), low_w(p[1]);
  read_end.reset(fcntl(p[0], F_DUPFD_CLOEXEC, 3));
  write_end.reset(fcntl(p[1], F_DUPFD_CLOEXEC, 3));
  if (read_end.get() < 0 || write_end.get() < 0) return false;
  return fcntl(read_end.get(), F_SETFL, fcntl(read_end.get(), F_GETFL) | O_NONBLOCK) == 0;
}

struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  bool actions_ok = false, attr_ok = false;
  ~SpawnSetup() {
    if (actions_ok) posix_spawn_file_actions_destroy(&actions);
    if (attr_ok) posix_spawnattr_destroy(&attr);
  }
};

// 0, or the errno of the failing step.
int prepare(SpawnSetup& s, int out_fd, int err_fd) {
  if (int rc = posix_spawn_file_actions_init(&s.actions); rc != 0) return rc;
  s.actions_ok = true;
  if (int rc = posix_spawnattr_init(&s.attr); rc != 0) return rc;
  s.attr_ok = true;
  int rc = posix_spawn_file_actions_addopen(&s.actions, 0, "/dev/null", O_RDONLY, 0);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&s.actions, out_fd, 1);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&s.actions, err_fd, 2);
  // Nothing of slurmstepd's (sockets, the job's files) leaks into the child.
  if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&s.actions, 3);
  // Not the user's working directory: a crash must not drop a core file there.
  if (rc == 0) rc = posix_spawn_file_actions_addchdir_np(&s.actions, "/");
  if (rc != 0) return rc;
  // slurmstepd blocks and ignores signals of its own; the child starts clean.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  rc = posix_spawnattr_setsigmask(&s.attr, &none);
  if (rc == 0) rc = posix_spawnattr_setsigdefault(&s.attr, &all);
  if (rc == 0) rc = posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  return rc;
}

// Reads what is there without blocking, at most 1 MiB a call so that a writer faster than us
// cannot keep us from the time limit. Returns false at end of file or on an error.
bool read_some(int fd, std::string& into, std::size_t keep, std::size_t& total) {
  char buf[16384];
  for (std::size_t round = 0; round < 64; ++round) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      total += static_cast<std::size_t>(n);
      if (into.size() < keep) into.append(buf, std::min(static_cast<std::size_t>(n), keep - into.size()));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;  // 0: end of file; other errors end the stream too
  }
  return true;
}

// waitpid without blocking longer than `grace`. True when reaped (status set).
bool reap_within(pid_t pid, milliseconds grace, int& status, int& error) {
  const auto until = Clock::now() + grace;
  while (true) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) return true;
    if (w < 0 && errno != EINTR) {
      error = errno;
      return false;
    }
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(2));
  }
}

class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  // Whatever happens in between (even an exception), the child does not outlive the call.
  ~Child() {
    if (!reaped_) kill_and_reap();
  }
  pid_t pid() const { return pid_; }
  bool reaped() const { return reaped_; }
  int status() const { return status_; }
  // Reaps it if it has ended. False on a waitpid error (errno in `error`).
  bool poll_exit(int& error) {
    while (true) {
      const pid_t w = waitpid(pid_, &status_, WNOHANG);
      if (w == pid_) {
        reaped_ = true;
        return true;
      }
      if (w == 0) return true;
      if (errno == EINTR) continue;
      error = errno;
      reaped_ = true;  // nothing left to reap: ECHILD
      return false;
    }
  }
  void kill_and_reap() {
    kill(pid_, SIGKILL);
    int error = 0;
    reap_within(pid_, reap_grace, status_, error);
    reaped_ = true;  // or given up on: never wait again
  }

 private:
  pid_t pid_;
  bool reaped_ = false;
  int status_ = 0;
};

ChildResult run(const std::vector<std::string>& argv, const ChildLimits& limits) {
  ChildResult r;
  if (argv.empty()) {
    r.error = EINVAL;
    return r;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  Fd out_r, out_w, err_r, err_w;
  if (!make_pipe(out_r, out_w) || !make_pipe(err_r, err_w)) {
    r.error = errno != 0 ? errno : EMFILE;
    return r;
  }
  SpawnSetup setup;
  if (int rc = prepare(setup, out_w.get(), err_w.get()); rc != 0) {
    r.error = rc;
    return r;
  }
  const auto deadline = Clock::now() + limits.timeout;
  pid_t pid = -1;
  if (int rc = posix_spawn(&pid, args[0], &setup.actions, &setup.attr, args.data(), environ); rc != 0) {
    r.error = rc;
    return r;
  }
  Child child(pid);
  out_w.reset();
  err_w.reset();

  std::size_t out_total = 0, err_total = 0;
  bool out_open = true, err_open = true;
  while (true) {
    int error = 0;
    if (!child.poll_exit(error)) {
      r.ending = ChildResult::Ending::lost;
      r.error = error;
      return r;
    }
    if (child.reaped()) {
      // It has ended: take what it left in the pipes, without waiting for anyone it started.
      if (out_open) read_some(out_r.get(), r.out, limits.max_stdout + 1, out_total);
      if (err_open) read_some(err_r.get(), r.err, limits.max_stderr_kept, err_total);
      break;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      child.kill_and_reap();
      r.ending = ChildResult::Ending::timed_out;
      return r;
    }
    // Poll the pipes; wake now and then to see whether the child ended while something it
    // started still holds them open.
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - now).count();
    const int wait_ms = static_cast<int>(std::min<long long>(left + 1, out_open || err_open ? 50 : 2));
    pollfd fds[2];
    nfds_t n = 0;
    if (out_open) fds[n++] = pollfd{out_r.get(), POLLIN, 0};
    if (err_open) fds[n++] = pollfd{err_r.get(), POLLIN, 0};
    if (n == 0) {
      std::this_thread::sleep_for(milliseconds(wait_ms));
      continue;
    }
    if (poll(fds, n, wait_ms) < 0 && errno != EINTR) {
      r.ending = ChildResult::Ending::lost;
      r.error = errno;
      return r;  // ~Child kills and reaps it
    }
    if (out_open) out_open = read_some(out_r.get(), r.out, limits.max_stdout + 1, out_total);
    if (err_open) err_open = read_some(err_r.get(), r.err, limits.max_stderr_kept, err_total);
    if (out_total > limits.max_stdout) {
      child.kill_and_reap();
      r.ending = ChildResult::Ending::too_much_output;
      r.out.resize(limits.max_stdout);
      return r;
    }
  }
  if (out_total > limits.max_stdout) {
    r.ending = ChildResult::Ending::too_much_output;
    r.out.resize(limits.max_stdout);
    return r;
  }
  const int status = child.status();
  if (WIFEXITED(status)) {
    r.ending = ChildResult::Ending::exited;
    r.exit_code = WEXITSTATUS(status);
  } else {
    r.ending = ChildResult::Ending::signaled;
    r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }
  return r;
}

}  // namespace

ChildResult run_bounded(const std::vector<std::string>& argv, const ChildLimits& limits) noexcept {
  try {
    return run(argv, limits);
  } catch (...) {  // out of memory while reading: the child was killed and reaped on the way out
    ChildResult r;
    r.error = ENOMEM;
    return r;
  }
}

}  // namespace riseml::placement
