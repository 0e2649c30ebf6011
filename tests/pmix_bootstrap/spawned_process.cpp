#include "spawned_process.hpp"

#include <fcntl.h>
#include <grp.h>  // setgroups
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace riseml::testing {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> changed_environment(const EnvironmentChanges& changes) {
  std::vector<std::string> entries;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text(*entry);
    std::string name = text.substr(0, text.find('='));
    if (changes.find(name) == changes.end()) entries.push_back(text);
  }
  for (const auto& [name, value] : changes) {
    if (value) entries.push_back(name + "=" + *value);
  }
  return entries;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& text : strings) pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

void read_into(int& fd, std::string& sink) {
  char buffer[8192];
  ssize_t got = read(fd, buffer, sizeof buffer);
  if (got > 0) {
    sink.append(buffer, static_cast<std::size_t>(got));
  } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
    close(fd);
    fd = -1;
  }
}

}  // namespace

SpawnedProcess::SpawnedProcess(const std::vector<std::string>& argv,
                               const EnvironmentChanges& changes, std::optional<OtherUser> as)
    : started_(Clock::now()) {
  std::vector<std::string> arguments = argv;
  std::vector<std::string> environment = changed_environment(changes);
  std::vector<char*> argv_pointers = pointers_to(arguments);
  std::vector<char*> env_pointers = pointers_to(environment);
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe2 failed");
  }
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, STDIN_FILENO);
    if (as && (setgroups(0, nullptr) != 0 || setgid(as->gid) != 0 || setuid(as->uid) != 0)) {
      static const char message[] = "spawned_process: cannot become the other user\n";
      [[maybe_unused]] ssize_t ignored = write(STDERR_FILENO, message, sizeof message - 1);
      _exit(126);
    }
    execvpe(argv_pointers[0], argv_pointers.data(), env_pointers.data());
    _exit(127);
  }
  setpgid(pid_, pid_);
  close(out[1]);
  close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
}

SpawnedProcess::~SpawnedProcess() {
  if (!exited_ && pid_ > 0) {
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
  if (err_fd_ >= 0) close(err_fd_);
}

bool SpawnedProcess::pump(std::chrono::milliseconds budget) {
  if (!exited_) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      result_.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      result_.elapsed =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_);
    }
  }
  std::vector<pollfd> fds;
  if (out_fd_ >= 0) fds.push_back({out_fd_, POLLIN, 0});
  if (err_fd_ >= 0) fds.push_back({err_fd_, POLLIN, 0});
  if (fds.empty()) {
    if (exited_) return false;
    std::this_thread::sleep_for(std::min(budget, std::chrono::milliseconds(20)));
    return true;
  }
  // Short slices so an exit is noticed even while something holds a pipe open.
  int slice = static_cast<int>(std::min<long long>(budget.count(), 20));
  if (poll(fds.data(), fds.size(), slice) > 0) {
    for (const pollfd& entry : fds) {
      if (entry.revents == 0) continue;
      if (entry.fd == out_fd_)
        read_into(out_fd_, result_.out);
      else
        read_into(err_fd_, result_.err);
    }
  }
  return true;
}

bool SpawnedProcess::wait_for_stdout(const std::function<bool(const std::string&)>& ready,
                                     std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (!ready(result_.out)) {
    if (Clock::now() >= deadline) return false;
    if (!pump(std::chrono::milliseconds(20)) && !ready(result_.out)) return false;
  }
  return true;
}

void SpawnedProcess::send_signal(int signal_number) {
  if (!exited_) kill(pid_, signal_number);
}

ProcessResult SpawnedProcess::wait(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (pump(std::chrono::milliseconds(20))) {
    if (Clock::now() >= deadline && !exited_) {
      result_.timed_out = true;
      kill(-pid_, SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);
      exited_ = true;
      result_.exit_code = 128 + SIGKILL;
      result_.elapsed =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_);
    }
    // Whatever still holds the pipes after the exit (a stray grandchild) must not hang us.
    if (exited_ && Clock::now() >= started_ + result_.elapsed + std::chrono::seconds(2)) break;
  }
  return result_;
}

ProcessResult run_process(const std::vector<std::string>& argv, const EnvironmentChanges& changes,
                          std::chrono::milliseconds timeout, std::optional<OtherUser> as) {
  SpawnedProcess process(argv, changes, as);
  return process.wait(timeout);
}

EnvironmentChanges without_launcher_variables() {
  EnvironmentChanges changes;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text(*entry);
    std::string name = text.substr(0, text.find('='));
    for (const char* prefix : {"PMIX_", "PMI_", "SLURM_", "OMPI_"}) {
      if (name.starts_with(prefix) && !name.starts_with("PMIX_MCA_")) changes[name] = std::nullopt;
    }
  }
  return changes;
}

std::vector<std::string> processes_with_marker(const std::string& marker,
                                               std::chrono::milliseconds grace) {
  auto deadline = Clock::now() + grace;
  while (true) {
    ProcessResult found = run_process({"pgrep", "-a", "-f", marker}, {}, std::chrono::seconds(10));
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < found.out.size()) {
      std::size_t end = found.out.find('\n', start);
      if (end == std::string::npos) end = found.out.size();
      if (end > start) lines.push_back(found.out.substr(start, end - start));
      start = end + 1;
    }
    if (lines.empty() || Clock::now() >= deadline) return lines;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string unique_marker() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name =
      test != nullptr ? std::string(test->test_suite_name()) + "." + test->name() : "no-test";
  return "riseml-marker-" + name + "-" + std::to_string(getpid());
}

ScratchTmpdir::ScratchTmpdir() {
  char pattern[] = "/tmp/riseml-test.XXXXXX";
  if (mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

ScratchTmpdir::~ScratchTmpdir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::vector<std::string> ScratchTmpdir::leftovers() const {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(path_)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

}  // namespace riseml::testing
