#include "job_supervisor.hpp"

#include <poll.h>
#include <signal.h>
#include <string.h>  // sigabbrev_np
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <utility>

#include "exit_status.hpp"
#include "wake_pipe.hpp"

namespace riseml::launch {

namespace {

// Elastic: how long the ranks still running may take to finish after the first one did.
constexpr std::chrono::seconds kElasticFinishGrace(10);

// Output that ends when all ranks are gone but something they started holds the pipe open.
constexpr auto kDrainAfterLastRank = std::chrono::seconds(1);

// Failures named after the cause; more would bury the cause under thousands of lines when a
// large job falls apart.
constexpr std::size_t kFailuresNamedBesidesTheCause = 8;

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t written = write(fd, data.data(), data.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return;  // a closed stdout/stderr must not stop the supervision
    }
    data.remove_prefix(static_cast<std::size_t>(written));
  }
}

void say(const std::string& message) {
  write_all(STDERR_FILENO, "riseml-launch: " + message + "\n");
}

std::string ranks_text(int count) {
  return std::to_string(count) + (count == 1 ? " rank" : " ranks");
}

std::string others_text(int others) {
  return others == 0 ? "no other rank is running" : "stopping the other " + ranks_text(others);
}

std::string signal_name(int signal_number) {
  const char* abbreviation = sigabbrev_np(signal_number);
  return abbreviation != nullptr ? std::string("SIG") + abbreviation
                                 : "signal " + std::to_string(signal_number);
}

std::string seconds_text(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", static_cast<double>(duration.count()) / 1000.0);
  return text;
}

std::string failure_text(const RankFailure& failure) {
  return "rank " + std::to_string(failure.rank) + " (pid " + std::to_string(failure.pid) + ") " +
         describe_wait_status(failure.wait_status);
}

// When `failure` was observed, relative to the cause: the cause is not always the first.
std::string relative_time_text(const RankFailure& failure, const RankFailure& cause) {
  auto offset = std::chrono::round<std::chrono::milliseconds>(failure.observed - cause.observed);
  if (offset.count() == 0) return "at the same time";
  return seconds_text(offset.count() < 0 ? -offset : offset) +
         (offset.count() < 0 ? " earlier" : " later");
}

}  // namespace

JobSupervisor::JobSupervisor(SupervisorSettings settings, PmixHostServer& server,
                             ServerStallWatch* stall_watch)
    : settings_(std::move(settings)), server_(server), stall_watch_(stall_watch) {}

void JobSupervisor::add_rank(int rank, StartedChild child) {
  std::string prefix = settings_.tag_output ? "[" + std::to_string(rank) + "] " : "";
  auto to = [](int fd) { return [fd](std::string_view lines) { write_all(fd, lines); }; };
  Rank entry;
  entry.rank = rank;
  entry.pid = child.pid;
  entry.out = std::make_unique<Stream>(
      Stream{std::move(child.stdout_pipe), LineForwarder(prefix, to(STDOUT_FILENO))});
  entry.err = std::make_unique<Stream>(
      Stream{std::move(child.stderr_pipe), LineForwarder(prefix, to(STDERR_FILENO))});
  ranks_.push_back(std::move(entry));
}

void JobSupervisor::start_failed(int rank, const std::string& why, int exit_code) {
  if (exit_code_) return;
  say("cannot start rank " + std::to_string(rank) + ": " + why + "; " +
      others_text(running_count()));
  stop_job(exit_code, SIGTERM);
}

int JobSupervisor::run() {
  while (true) {
    handle_events();
    if (running_count() == 0) {
      if (stopped()) kill_leftovers_of_stopped_ranks();
      if (!drain_deadline_) drain_deadline_ = Clock::now() + kDrainAfterLastRank;
      if (!any_stream_open() || Clock::now() >= *drain_deadline_) break;
    }

    std::vector<pollfd> fds{{WakePipe::read_fd(), POLLIN, 0}};
    std::vector<Stream*> streams;
    for (Rank& rank : ranks_) {
      for (Stream* stream : {rank.out.get(), rank.err.get()}) {
        if (stream->fd) {
          fds.push_back({stream->fd.get(), POLLIN, 0});
          streams.push_back(stream);
        }
      }
    }
    int ready = poll(fds.data(), fds.size(), poll_timeout_ms());
    if (ready < 0) {
      if (errno == EINTR) continue;
      say(std::string("poll failed: ") + strerror(errno));
      break;
    }
    if (fds[0].revents != 0) WakePipe::drain();
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) forward_output(*streams[i - 1]);
    }
  }
  for (Rank& rank : ranks_) {
    for (Stream* stream : {rank.out.get(), rank.err.get()}) {
      if (stream->fd) {
        stream->forwarder.finish();
        stream->fd.reset();
      }
    }
  }
  return exit_code_.value_or(0);
}

void JobSupervisor::handle_events() {
  handle_stop_signals();
  handle_abort_requests();
  reap_ranks();
  handle_deadlines();
}

void JobSupervisor::handle_stop_signals() {
  int received = WakePipe::stop_signal_count();
  if (received == handled_stop_signals_) return;
  settle_failures(true);  // they came first
  bool first = handled_stop_signals_ == 0 && received == 1;
  handled_stop_signals_ = received;
  int signal_number = WakePipe::last_stop_signal();
  if (!exit_code_) exit_code_ = 128 + signal_number;
  if (running_count() == 0) return;
  if (first) {
    say("received " + signal_name(signal_number) + "; stopping " + ranks_text(running_count()));
    stop_job(128 + signal_number, signal_number);
    return;
  }
  // Asked twice: the user does not want to wait for the grace period.
  say("received " + signal_name(signal_number) + " again; killing " + ranks_text(running_count()));
  signal_running_ranks(SIGKILL);
  killed_ = true;
}

void JobSupervisor::handle_abort_requests() {
  std::vector<AbortRequest> requests = server_.take_abort_requests();
  if (!requests.empty()) settle_failures(true);  // they came first
  for (const AbortRequest& request : requests) {
    if (exit_code_) continue;
    pid_t pid = -1;
    int others = 0;
    for (const Rank& rank : ranks_) {
      if (rank.rank == request.rank)
        pid = rank.pid;
      else if (rank.running)
        ++others;
    }
    say("rank " + std::to_string(request.rank) + " (pid " + std::to_string(pid) +
        ") called PMIx_Abort with status " + std::to_string(request.status) +
        (request.message.empty() ? "" : " (" + request.message + ")") + "; " + others_text(others));
    int code = request.status >= 1 && request.status <= 255 ? request.status : 1;
    stop_job(code, SIGTERM);
  }
}

void JobSupervisor::reap_ranks() {
  while (true) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;  // none ended (0) or no children left (ECHILD)
    Rank* rank = find_rank(pid);
    if (rank == nullptr) continue;
    rank->running = false;
    if (!is_failure(status)) {
      if (settings_.elastic && !elastic_finish_deadline_)
        elastic_finish_deadline_ = Clock::now() + kElasticFinishGrace;
      continue;
    }
    RankFailure failure{rank->rank, pid, status, Clock::now()};
    if (!exit_code_) {
      unsettled_failures_.push_back(failure);
    } else if (WIFSIGNALED(status) && !rank->was_sent(WTERMSIG(status))) {
      // Not a signal the launcher sent: a crash, or a kill from elsewhere - possibly what the
      // job failed of, only seen late (a dying process can take long to become reapable).
      say("also: " + failure_text(failure) + " while the job was being stopped");
    }
    // Error exits after the stop are the ranks' answers to it, not news.
  }
  settle_failures(false);
}

void JobSupervisor::settle_failures(bool now) {
  if (unsettled_failures_.empty()) return;
  if (!now && !cause_is_settled(unsettled_failures_, Clock::now(), running_count() > 0)) return;
  std::vector<RankFailure> failures = blame_order(std::exchange(unsettled_failures_, {}));
  const RankFailure& cause = failures.front();
  if (settings_.elastic && running_count() > 0) {
    // The survivors go on without the failed ranks (hvd.elastic re-forms the world).
    for (const RankFailure& f : failures)
      say(failure_text(f) + "; elastic: the other " + ranks_text(running_count()) + " go on");
    return;
  }
  say(failure_text(cause) + "; " + others_text(running_count()));
  std::size_t named = std::min(failures.size(), 1 + kFailuresNamedBesidesTheCause);
  for (std::size_t i = 1; i < named; ++i) {
    say("also: " + failure_text(failures[i]) + ", " + relative_time_text(failures[i], cause));
  }
  if (std::size_t more = failures.size() - named; more > 0) {
    say("also: " + std::to_string(more) + (more == 1 ? " more rank" : " more ranks") + " failed");
  }
  stop_job(exit_code_of(cause.wait_status), SIGTERM);
}

void JobSupervisor::handle_deadlines() {
  settle_failures(false);  // the blame window may have passed
  Clock::time_point now = Clock::now();
  bool past_timeout =
      settings_.timeout && now >= started_ + *settings_.timeout && running_count() > 0;
  if (past_timeout) settle_failures(true);  // they came first
  if (past_timeout && !exit_code_) {
    say("the job ran longer than --timeout " + seconds_text(*settings_.timeout) + "; stopping " +
        ranks_text(running_count()));
    stop_job(kTimeoutExitCode, SIGTERM);
  }
  if (elastic_finish_deadline_ && now >= *elastic_finish_deadline_ && running_count() > 0 &&
      !exit_code_) {
    say("elastic: a rank finished " + seconds_text(kElasticFinishGrace) + " ago; stopping " +
        ranks_text(running_count()) + " still running (left out of the job by the others)");
    stop_job(0, SIGTERM);
  }
  check_pmix_server(now);
  if (kill_deadline_ && !killed_ && now >= *kill_deadline_) {
    killed_ = true;
    if (running_count() > 0) {
      say(ranks_text(running_count()) + " still running " + seconds_text(settings_.stop_grace) +
          " after being asked to stop; sending SIGKILL");
      signal_running_ranks(SIGKILL);
    }
  }
}

// Only while ranks run and nothing else stopped the job: a stop does not need PMIx any more.
void JobSupervisor::check_pmix_server(Clock::time_point now) {
  if (stall_watch_ == nullptr || exit_code_ || running_count() == 0) return;
  if (!stall_watch_->stalled(now)) return;
  settle_failures(true);  // they came first
  if (exit_code_) return;
  say("the PMIx server on host " + settings_.hostname +
      " stopped responding (its progress thread left a request unanswered for " +
      seconds_text(stall_watch_->settings().limit) +
      ": libpmix 4.2.2 deadlocks once it refused a connection from another user's process, "
      "see docs/launching.md), so ranks would hang in PMIx_Init or in a fence; stopping " +
      ranks_text(running_count()) + " (exit status " + std::to_string(kPmixStalledExitCode) +
      "); run the job again");
  stop_job(kPmixStalledExitCode, SIGTERM);
}

void JobSupervisor::forward_output(Stream& stream) {
  char buffer[64 * 1024];
  ssize_t got = read(stream.fd.get(), buffer, sizeof buffer);
  if (got < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (got <= 0) {
    stream.forwarder.finish();
    stream.fd.reset();
    return;
  }
  stream.forwarder.feed(std::string_view(buffer, static_cast<std::size_t>(got)));
}

int JobSupervisor::poll_timeout_ms() const {
  std::optional<Clock::time_point> next;
  auto consider = [&](Clock::time_point when) { next = next ? std::min(*next, when) : when; };
  if (settings_.timeout && !exit_code_) consider(started_ + *settings_.timeout);
  if (!unsettled_failures_.empty()) consider(unsettled_failures_.front().observed + kBlameWindow);
  if (kill_deadline_ && !killed_) consider(*kill_deadline_);
  if (drain_deadline_) consider(*drain_deadline_);
  if (elastic_finish_deadline_ && !exit_code_) consider(*elastic_finish_deadline_);
  if (stall_watch_ != nullptr && !exit_code_) consider(stall_watch_->next_check(Clock::now()));
  if (!next) return -1;
  auto wait = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now()).count();
  return static_cast<int>(std::clamp<decltype(wait)>(wait, 0, 60'000));
}

bool JobSupervisor::any_stream_open() const {
  return std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& rank) {
    return static_cast<bool>(rank.out->fd) || static_cast<bool>(rank.err->fd);
  });
}

void JobSupervisor::stop_job(int exit_code, int signal_number) {
  if (!exit_code_) exit_code_ = exit_code;
  if (!kill_deadline_) kill_deadline_ = Clock::now() + settings_.stop_grace;
  signal_running_ranks(signal_number);
}

void JobSupervisor::signal_running_ranks(int signal_number) {
  for (Rank& rank : ranks_) {
    if (!rank.running) continue;
    rank.signals_sent |= std::uint64_t{1} << signal_number;  // the launcher's are all below 64
    // The whole process group, so whatever the rank started stops too.
    if (kill(-rank.pid, signal_number) != 0) kill(rank.pid, signal_number);
  }
}

// A rank's children that outlived it (background jobs of a shell ignore SIGINT, for one) are
// still in its process group: a stopped job leaves none of them behind. The group id cannot
// have been reused while such members exist.
void JobSupervisor::kill_leftovers_of_stopped_ranks() {
  if (leftovers_killed_) return;
  leftovers_killed_ = true;
  for (const Rank& rank : ranks_) kill(-rank.pid, SIGKILL);
}

int JobSupervisor::running_count() const {
  return static_cast<int>(
      std::count_if(ranks_.begin(), ranks_.end(), [](const Rank& rank) { return rank.running; }));
}

JobSupervisor::Rank* JobSupervisor::find_rank(pid_t pid) {
  auto found = std::find_if(ranks_.begin(), ranks_.end(),
                            [pid](const Rank& rank) { return rank.pid == pid; });
  return found == ranks_.end() ? nullptr : &*found;
}

}  // namespace riseml::launch
