#include "job_supervisor.hpp"

#include <poll.h>
#include <signal.h>
#include <string.h>  // sigabbrev_np
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "exit_status.hpp"
#include "wake_pipe.hpp"

namespace riseml::launch {

namespace {

// Output that ends when all ranks are gone but something they started holds the pipe open.
constexpr auto kDrainAfterLastRank = std::chrono::seconds(1);

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

}  // namespace

JobSupervisor::JobSupervisor(SupervisorSettings settings, PmixHostServer& server)
    : settings_(settings), server_(server) {}

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
  for (const AbortRequest& request : server_.take_abort_requests()) {
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
  struct Ended {
    Rank* rank;
    int status;
  };
  std::vector<Ended> failures;
  while (true) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;  // none ended (0) or no children left (ECHILD)
    Rank* rank = find_rank(pid);
    if (rank == nullptr) continue;
    rank->running = false;
    if (is_failure(status) && !exit_code_) failures.push_back({rank, status});
  }
  if (failures.empty()) return;
  // Ranks that ended together are reported in the kernel's order, oldest first, which says
  // nothing about who failed first. A rank killed by a signal is the likelier cause (its peers
  // then fail in PMIx calls and exit non-zero), so it is named first and decides the status.
  std::stable_sort(failures.begin(), failures.end(), [](const Ended& a, const Ended& b) {
    return WIFSIGNALED(a.status) && !WIFSIGNALED(b.status);
  });
  const Ended& first = failures.front();
  say("rank " + std::to_string(first.rank->rank) + " (pid " + std::to_string(first.rank->pid) +
      ") " + describe_wait_status(first.status) + "; " + others_text(running_count()));
  for (std::size_t i = 1; i < failures.size(); ++i) {
    say("rank " + std::to_string(failures[i].rank->rank) + " (pid " +
        std::to_string(failures[i].rank->pid) + ") " + describe_wait_status(failures[i].status) +
        " at the same time");
  }
  stop_job(exit_code_of(first.status), SIGTERM);
}

void JobSupervisor::handle_deadlines() {
  Clock::time_point now = Clock::now();
  if (settings_.timeout && !exit_code_ && now >= started_ + *settings_.timeout &&
      running_count() > 0) {
    say("the job ran longer than --timeout " + seconds_text(*settings_.timeout) + "; stopping " +
        ranks_text(running_count()));
    stop_job(kTimeoutExitCode, SIGTERM);
  }
  if (kill_deadline_ && !killed_ && now >= *kill_deadline_) {
    killed_ = true;
    if (running_count() > 0) {
      say(ranks_text(running_count()) + " still running " + seconds_text(settings_.stop_grace) +
          " after being asked to stop; sending SIGKILL");
      signal_running_ranks(SIGKILL);
    }
  }
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
  if (kill_deadline_ && !killed_) consider(*kill_deadline_);
  if (drain_deadline_) consider(*drain_deadline_);
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
  for (const Rank& rank : ranks_) {
    if (!rank.running) continue;
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
