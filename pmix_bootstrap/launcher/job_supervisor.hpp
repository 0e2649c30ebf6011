// Watches the ranks of a job on one thread: forwards their output line by line, reaps them,
// and stops them all - SIGTERM to each rank's process group, SIGKILL after a grace period -
// when one fails, a rank calls PMIx_Abort, the launcher gets SIGINT/SIGTERM/SIGHUP or the job
// runs past its timeout. Says once, on stderr, why it stopped the job.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "line_forwarder.hpp"
#include "pmix_host_server.hpp"

namespace riseml::launch {

struct SupervisorSettings {
  bool tag_output = false;
  std::optional<std::chrono::milliseconds> timeout;
  std::chrono::milliseconds stop_grace = std::chrono::seconds(5);
};

// The exit status riseml-launch uses when its --timeout ends the job (as timeout(1) does).
inline constexpr int kTimeoutExitCode = 124;

class JobSupervisor {
 public:
  // `server` delivers PMIx_Abort requests; WakePipe::install() must have run.
  JobSupervisor(SupervisorSettings settings, PmixHostServer& server);
  JobSupervisor(const JobSupervisor&) = delete;
  JobSupervisor& operator=(const JobSupervisor&) = delete;

  void add_rank(int rank, StartedChild child);
  // Rank `rank` could not be started: the ones that were are stopped, the job ends with
  // `exit_code`.
  void start_failed(int rank, const std::string& why, int exit_code);

  // Until every rank has ended and its output is forwarded. Returns riseml-launch's exit
  // status: 0, the first failed rank's status (128 + signal for a signal), the PMIx_Abort
  // status, 128 + the signal the launcher got, or kTimeoutExitCode.
  int run();

  // Whether the job was stopped (a rank failed or aborted, a signal, the timeout) rather than
  // every rank ending on its own with status 0.
  bool stopped() const { return exit_code_.has_value(); }

 private:
  using Clock = std::chrono::steady_clock;

  struct Stream {
    UniqueFd fd;
    LineForwarder forwarder;
  };
  struct Rank {
    int rank = -1;
    pid_t pid = -1;
    bool running = true;
    std::unique_ptr<Stream> out;
    std::unique_ptr<Stream> err;
  };

  void handle_events();
  void handle_stop_signals();
  void handle_abort_requests();
  void reap_ranks();
  void handle_deadlines();
  void forward_output(Stream& stream);
  int poll_timeout_ms() const;
  bool any_stream_open() const;

  // Decides the exit status (first reason wins), signals every running rank.
  void stop_job(int exit_code, int signal_number);
  void signal_running_ranks(int signal_number);
  void kill_leftovers_of_stopped_ranks();
  int running_count() const;
  Rank* find_rank(pid_t pid);

  SupervisorSettings settings_;
  PmixHostServer& server_;
  std::vector<Rank> ranks_;
  Clock::time_point started_ = Clock::now();
  std::optional<int> exit_code_;
  std::optional<Clock::time_point> kill_deadline_;
  std::optional<Clock::time_point> drain_deadline_;
  bool killed_ = false;
  bool leftovers_killed_ = false;
  int handled_stop_signals_ = 0;
};

}  // namespace riseml::launch
