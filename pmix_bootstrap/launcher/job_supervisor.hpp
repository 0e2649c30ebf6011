// Watches the ranks of a job on one thread: forwards their output line by line, reaps them,
// and stops them all - SIGTERM to each rank's process group, SIGKILL after a grace period -
// when one fails, a rank calls PMIx_Abort, the launcher gets SIGINT/SIGTERM/SIGHUP or the job
// runs past its timeout or the embedded PMIx server stops responding (see
// server_stall_watch.hpp). Says once, on stderr, why it stopped the job; when ranks fail
// together it names the one to blame first (see failure_blame.hpp), then the others.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "failure_blame.hpp"
#include "line_forwarder.hpp"
#include "pmix_host_server.hpp"
#include "server_stall_watch.hpp"

namespace riseml::launch {

struct SupervisorSettings {
  bool tag_output = false;
  bool elastic = false;  // see LaunchOptions::elastic
  std::optional<std::chrono::milliseconds> timeout;
  std::chrono::milliseconds stop_grace = std::chrono::seconds(5);
  std::string hostname;  // for messages
};

// The exit status riseml-launch uses when its --timeout ends the job (as timeout(1) does).
inline constexpr int kTimeoutExitCode = 124;
// ... and when the embedded PMIx server stopped responding (as timeout(1) does when it fails).
inline constexpr int kPmixStalledExitCode = 125;

class JobSupervisor {
 public:
  // `server` delivers PMIx_Abort requests; `stall_watch` (none: no check) tells when it got
  // stuck. WakePipe::install() must have run.
  JobSupervisor(SupervisorSettings settings, PmixHostServer& server, ServerStallWatch* stall_watch);
  JobSupervisor(const JobSupervisor&) = delete;
  JobSupervisor& operator=(const JobSupervisor&) = delete;

  void add_rank(int rank, StartedChild child);
  // Rank `rank` could not be started: the ones that were are stopped, the job ends with
  // `exit_code`.
  void start_failed(int rank, const std::string& why, int exit_code);

  // Until every rank has ended and its output is forwarded. Returns riseml-launch's exit
  // status: 0, the status of the failed rank blamed (128 + signal for a signal), the PMIx_Abort
  // status, 128 + the signal the launcher got, kTimeoutExitCode or kPmixStalledExitCode.
  int run();

  // Whether the job was stopped (a rank failed or aborted, a signal, the timeout, a stuck PMIx
  // server) rather than every rank ending on its own with status 0.
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
    std::uint64_t signals_sent = 0;  // bit n: the launcher sent it signal n
    bool was_sent(int signal_number) const {
      return signal_number < 64 && ((signals_sent >> signal_number) & 1) != 0;
    }
    std::unique_ptr<Stream> out;
    std::unique_ptr<Stream> err;
  };

  void handle_events();
  void handle_stop_signals();
  void handle_abort_requests();
  void reap_ranks();
  // Once the cause of the failures observed so far is settled - or at once when `now`, because
  // something else is about to stop the job - names it and the others and stops the job.
  void settle_failures(bool now);
  void handle_deadlines();
  void check_pmix_server(Clock::time_point now);
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
  ServerStallWatch* stall_watch_;
  std::vector<Rank> ranks_;
  Clock::time_point started_ = Clock::now();
  std::optional<int> exit_code_;
  // Failures observed before the launcher stopped the job, in the order observed.
  std::vector<RankFailure> unsettled_failures_;
  std::optional<Clock::time_point> kill_deadline_;
  // Elastic: when the ranks still running after one finished well are stopped (left out of
  // the job by the survivors, e.g. a stopped one, they would never end).
  std::optional<Clock::time_point> elastic_finish_deadline_;
  std::optional<Clock::time_point> drain_deadline_;
  bool killed_ = false;
  bool leftovers_killed_ = false;
  int handled_stop_signals_ = 0;
};

}  // namespace riseml::launch
