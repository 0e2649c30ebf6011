// Runs a program for a multi-process test: captured stdout/stderr, an environment built from
// this one, its own process group (so a test that overruns kills everything it started), and
// helpers for the checks every such test ends with.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace riseml::testing {

struct ProcessResult {
  int exit_code = -1;  // the shell's convention: 128 + signal when killed by one
  bool timed_out = false;
  std::string out;
  std::string err;
  std::chrono::milliseconds elapsed{0};
};

// Lines, each followed by a newline: for test failure messages.
inline std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

// Variables to set (value) or remove (nullopt) relative to this process's environment.
using EnvironmentChanges = std::map<std::string, std::optional<std::string>>;

// Another user to run a program as, without supplementary groups (needs root).
struct OtherUser {
  uid_t uid;
  gid_t gid;
};

class SpawnedProcess {
 public:
  SpawnedProcess(const std::vector<std::string>& argv, const EnvironmentChanges& changes = {},
                 std::optional<OtherUser> as = std::nullopt);
  SpawnedProcess(const SpawnedProcess&) = delete;
  SpawnedProcess& operator=(const SpawnedProcess&) = delete;
  // Kills the process group if the process still runs.
  ~SpawnedProcess();

  pid_t pid() const { return pid_; }
  const std::string& out() const { return result_.out; }

  // Collects output until `ready(stdout so far)` holds; false after `timeout`.
  bool wait_for_stdout(const std::function<bool(const std::string&)>& ready,
                       std::chrono::milliseconds timeout);
  void send_signal(int signal_number);
  // Until the process exits and its output ends; after `timeout` kills its process group.
  ProcessResult wait(std::chrono::milliseconds timeout);

 private:
  // Reads what is available within `budget`; returns false once the process has exited and
  // both streams are closed.
  bool pump(std::chrono::milliseconds budget);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  bool exited_ = false;
  std::chrono::steady_clock::time_point started_;
  ProcessResult result_;
};

ProcessResult run_process(const std::vector<std::string>& argv,
                          const EnvironmentChanges& changes = {},
                          std::chrono::milliseconds timeout = std::chrono::seconds(60),
                          std::optional<OtherUser> as = std::nullopt);

// Removes every variable a launcher could have set, so a test is not fooled by running inside
// srun or mpirun itself.
EnvironmentChanges without_launcher_variables();

// Names of processes whose command line contains `marker`, per pgrep -f; waits up to `grace`
// for them to disappear first.
std::vector<std::string> processes_with_marker(const std::string& marker,
                                               std::chrono::milliseconds grace);

// A unique string for pgrep: the test's name and this process's pid.
std::string unique_marker();

// A fresh, empty directory under /tmp to use as a launcher's TMPDIR.
class ScratchTmpdir {
 public:
  ScratchTmpdir();
  ScratchTmpdir(const ScratchTmpdir&) = delete;
  ScratchTmpdir& operator=(const ScratchTmpdir&) = delete;
  ~ScratchTmpdir();
  const std::string& path() const { return path_; }
  // What is left in it (names), to check that a launcher cleaned up.
  std::vector<std::string> leftovers() const;

 private:
  std::string path_;
};

}  // namespace riseml::testing
