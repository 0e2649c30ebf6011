#include "supervisor.hpp"

#include "piped_child.hpp"
#include "srun_step.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

extern char** environ;

namespace riseml::elastic {

void DriverLog::say(const std::string& message) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
  std::lock_guard lock(mutex_);
  std::fprintf(stdout, "riseml-elastic: %s.%03lld %s\n", stamp, static_cast<long long>(ms), message.c_str());
  std::fflush(stdout);
}

void DriverLog::worker_line(const std::string& line) {
  std::lock_guard lock(mutex_);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

namespace {

using Clock = std::chrono::steady_clock;
std::atomic<int> g_signal{0};
void on_signal(int sig) { g_signal = sig; }

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("signal ") + ::strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// One srun step (every worker of a node) or, with --launcher local, one worker's process.
struct Step {
  StartWorkers workers;  // with --launcher local: count 1, the worker's own rank
  bool srun = true;
  pid_t pid = -1;  // -1 once it ended
  std::thread reader;
  std::shared_ptr<std::atomic<bool>> output_closed = std::make_shared<std::atomic<bool>>(false);
  Clock::time_point term_sent{};
  bool killed = false;
  std::vector<int> ranks() const {
    std::vector<int> r;
    for (int i = 0; i < workers.count; ++i) r.push_back(workers.rank_base + i);
    return r;
  }
};

// srun --label writes "<task>: text" (the task number padded with spaces); the job rank is
// the step's first rank plus the task. A local worker's lines get its rank.
std::string relabel(const std::string& line, const Step& step) {
  if (!step.srun) return std::to_string(step.workers.rank_base) + ": " + line;
  std::size_t at = 0;
  while (at < line.size() && line[at] == ' ') ++at;
  std::size_t digits = at;
  while (digits < line.size() && digits - at < 7 && line[digits] >= '0' && line[digits] <= '9') ++digits;
  if (digits > at && line.compare(digits, 2, ": ") == 0)
    return std::to_string(step.workers.rank_base + std::stoi(line.substr(at, digits - at))) + ": " +
           line.substr(digits + 2);
  return step.workers.host + ": " + line;
}

// Forks the step with its output on a pipe; the reader thread relabels it.
void start(Step& step, const std::vector<std::string>& argv,
           const std::vector<std::pair<std::string, std::string>>& extra, DriverLog& log) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  const PipedChild child = start_piped(argv, env_strings, true);
  step.pid = child.pid;
  const int fd = child.output;
  step.reader = std::thread([fd, &step, &log, closed = step.output_closed] {
    std::string pending;
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      pending.append(buf, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
        log.worker_line(relabel(pending.substr(0, nl), step));
        pending.erase(0, nl + 1);
      }
    }
    if (!pending.empty()) log.worker_line(relabel(pending, step));
    ::close(fd);
    *closed = true;
  });
}

// The discovery script runs on a thread of its own (it may be slow); the loop takes its
// latest answer.
class DiscoveryThread {
 public:
  DiscoveryThread(std::function<std::vector<HostSlots>()> discover, Clock::duration interval, DriverLog& log)
      : discover_(std::move(discover)), interval_(interval), log_(log), thread_([this] { run(); }) {}
  ~DiscoveryThread() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  std::optional<std::vector<HostSlots>> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(latest_, std::nullopt);
  }

 private:
  void run() {
    std::string last_error;
    std::optional<std::vector<HostSlots>> last;
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
      lock.unlock();
      std::optional<std::vector<HostSlots>> found;
      try {
        found = discover_();
        last_error.clear();
      } catch (const std::exception& e) {
        // The hosts it found last stay; the error is said once until it changes.
        if (e.what() != last_error) log_.say(std::string("discovery failed: ") + e.what());
        last_error = e.what();
      }
      lock.lock();
      if (found && found != last) {
        last = found;
        latest_ = std::move(found);
      }
    }
  }
  std::function<std::vector<HostSlots>()> discover_;
  Clock::duration interval_;
  DriverLog& log_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::optional<std::vector<HostSlots>> latest_;
  std::thread thread_;
};

}  // namespace

int supervise(const DriverOptions& options, const std::string& job_id, DriverLog& log,
              const SupervisorLinks& links) {
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGHUP, &sa, nullptr);

  HostHealth health(options.cooldown);
  WorldPlanner::Limits limits;
  limits.min_ranks = options.min_ranks();
  limits.max_ranks = options.max_ranks();
  limits.reset_limit = options.reset_limit;
  limits.elastic_timeout = options.elastic_timeout;
  limits.start_timeout = options.start_timeout;
  limits.hosts_may_appear = !options.discovery_script.empty();
  WorldPlanner planner(limits, health);
  const bool local = options.launcher == Launcher::local;
  const std::string min_text = options.min_np
                                   ? "--min-np " + std::to_string(*options.min_np)
                                   : "--min-workers " + std::to_string(options.min_workers);
  for (const auto& note : planner.hosts_found(links.discover_hosts())) log.say(note);
  std::optional<DiscoveryThread> discovery;
  if (!options.discovery_script.empty())
    discovery.emplace(links.discover_hosts, options.discovery_interval, log);

  // A deque: the reader threads and the loop keep references to steps while hosts join.
  std::deque<Step> steps;
  bool started_once = false;
  bool ending = false;
  int end_code = 0;
  std::optional<int> first_failure;
  std::optional<Clock::time_point> first_finish;
  std::optional<Clock::time_point> decide_at = Clock::now();
  std::set<std::string> said_left;  // nodes whose leaving was logged
  // Failures come in bursts (a rank's exit, then every survivor's report): one decision.
  const auto soon = [&](Clock::duration after) {
    const auto at = Clock::now() + after;
    if (!decide_at || at < *decide_at) decide_at = at;
  };
  const auto stop = [&](Step& s, const std::string& why, bool hard) {
    if (s.pid <= 0 || s.term_sent != Clock::time_point{}) return;
    log.say("stopping the workers on " + s.workers.host +
            (s.srun ? "" : " (rank " + std::to_string(s.workers.rank_base) + ")") + ": " + why);
    if (!s.srun) ::kill(s.pid, SIGCONT);  // a stopped worker gets the signal too
    ::kill(s.pid, hard && !s.srun ? SIGKILL : SIGTERM);
    s.term_sent = Clock::now();
  };
  const auto stop_all = [&](const std::string& why) {
    for (auto& s : steps) stop(s, why, false);
  };
  const auto end_job = [&](const std::string& why) {
    if (ending) return;
    ending = true;
    end_code = 1;
    log.say("ending the job: " + why);
    stop_all("the job ends");
  };
  const auto start_workers = [&](const StartWorkers& w) {
    const int copies = local ? w.count : 1;
    for (int i = 0; i < copies; ++i) {
      Step& step = steps.emplace_back();
      step.workers = w;
      step.srun = !local;
      if (local) {
        step.workers.rank_base = w.rank_base + i;
        step.workers.count = 1;
      }
      start(step, local ? options.command : srun_command(w, options, job_id),
            links.worker_environment(w, local ? i : -1), log);
    }
  };
  const auto decide = [&] {
    decide_at.reset();
    WorldPlanner::Decision d = planner.decide(Clock::now());
    for (const auto& note : d.notes) log.say(note);
    for (int r : d.stop_now)
      for (auto& s : steps) {
        const auto ranks = s.ranks();
        if (std::find(ranks.begin(), ranks.end(), r) != ranks.end())
          stop(s, "rank " + std::to_string(r) + " was blamed for a failure", true);
      }
    if (!started_once && !d.start.empty() && !d.end_job) {
      std::string names;
      int workers = 0;
      for (const auto& w : d.start) {
        names += (names.empty() ? "" : ", ") + w.host;
        workers += w.count;
      }
      log.say("started " + std::to_string(workers) + " workers on " + std::to_string(d.start.size()) +
              " nodes (" + names + "); the job ends when fewer than " + min_text + " remain" +
              (local ? " (local processes)" : ""));
    }
    if (d.end_job) {
      end_job(*d.end_job);
      return;
    }
    // The first world is announced before its workers start: they find it at once.
    if (d.announce) {
      links.announce_world(*d.announce);
      log.say("next world (" + d.announce->why + "): " + std::to_string(d.announce->members.size()) +
              " workers, rank(s) " + rank_list(d.announce->members));
    }
    if (d.pending) links.announce_pending(*d.pending);
    for (const auto& w : d.start) {
      std::vector<int> ranks;
      for (int r = w.rank_base; r < w.rank_base + w.count; ++r) ranks.push_back(r);
      if (w.joining)
        log.say("node " + w.host + " joins as rank(s) " + rank_list(ranks) +
                ": the world with it forms when its workers are up, at the others' next commit");
      start_workers(w);
    }
    if (!d.start.empty()) started_once = true;
  };

  for (;;) {
    const auto now = Clock::now();
    // 1. Steps that ended.
    for (auto& s : steps) {
      if (s.pid <= 0) continue;
      int status = 0;
      const pid_t done = ::waitpid(s.pid, &status, WNOHANG);
      if (done != s.pid) continue;
      s.pid = -1;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      const auto ranks = s.ranks();
      const bool member = std::any_of(ranks.begin(), ranks.end(), [&](int r) { return planner.in_world(r); });
      const bool gone = std::all_of(ranks.begin(), ranks.end(), [&](int r) { return planner.gone(r); });
      const std::string who = s.srun ? "node " + s.workers.host
                                     : "rank " + std::to_string(s.workers.rank_base) + " on " + s.workers.host;
      if (ok && member && !gone) {
        log.say(who + ": " + (s.srun ? "its workers finished" : "finished"));
        if (!first_finish) first_finish = now;
        planner.finishing();
      } else if (s.term_sent != Clock::time_point{} || gone) {
        log.say(who + ": ended (" + describe_status(status) + ")" + (gone ? ", out of the world" : ""));
      } else if (!ok) {
        log.say((s.srun ? "node " + s.workers.host + " left: its step ended with "
                        : who + " failed: " ) + describe_status(status));
        if (s.srun) said_left.insert(s.workers.host);
        if (!first_failure) first_failure = exit_code_of(status);
      }
      // A worker the driver stopped did not fail.
      for (int r : ranks)
        for (const auto& note : planner.worker_exited(r, ok || s.term_sent != Clock::time_point{}, now))
          log.say(note);
      if (!ok) soon(std::chrono::milliseconds(100));
    }
    // 2. What the workers and the discovery said.
    for (const FailureReport& r : links.take_failure_reports()) {
      log.say("rank " + std::to_string(r.rank) + " reports a failure" +
              (r.culprits.empty() ? std::string(" (no rank blamed)") : ", blaming rank(s) " + rank_list(r.culprits)));
      for (const auto& note : planner.failure_reported(r, now)) log.say(note);
      soon(std::chrono::milliseconds(100));
    }
    for (int r : links.take_ready_workers()) {
      planner.worker_ready(r);
      soon(std::chrono::milliseconds(0));
    }
    if (discovery)
      if (auto hosts = discovery->take()) {
        for (const auto& note : planner.hosts_found(*hosts)) log.say(note);
        soon(std::chrono::milliseconds(0));
      }
    for (const WorldChange& change : links.take_world_changes()) {
      std::set<std::string> nodes;
      for (int r : change.members) nodes.insert(planner.host_of(r));
      std::string names;
      for (const auto& n : nodes) names += (names.empty() ? "" : ", ") + n;
      log.say("the world re-formed: " + std::to_string(change.members.size()) + " workers on " +
              std::to_string(nodes.size()) + " node(s) (" + names + ")" +
              (change.left.empty() ? "" : "; left: rank(s) " + rank_list(change.left)) +
              (change.joined.empty() ? "" : "; joined: rank(s) " + rank_list(change.joined)));
      // A node none of whose workers is in the new world has left, even if they still run (a
      // node cut off by its link, workers of a removed or blacklisted host that did not go yet).
      std::set<std::string> hosts_left;
      for (int r : change.left) hosts_left.insert(planner.host_of(r));
      for (const auto& h : nodes) hosts_left.erase(h);
      for (const auto& h : hosts_left)
        if (said_left.insert(h).second) log.say("node " + h + " left: the survivors re-formed without its workers");
      for (auto& s : steps) {
        const auto ranks = s.ranks();
        if (s.pid > 0 && !nodes.count(s.workers.host) &&
            std::all_of(ranks.begin(), ranks.end(), [&](int r) { return planner.gone(r); }))
          stop(s, "out of the world", false);
      }
    }
    // 3. Decide.
    bool running = false;
    for (const auto& s : steps) running = running || s.pid > 0;
    if (!ending && !first_finish && (!running || (decide_at && now >= *decide_at)))
      decide();
    // Waiting for hosts, or a cooldown ended: look again soon.
    if (!ending && !first_finish && !decide_at && planner.wants_decision(Clock::now()))
      soon(std::chrono::milliseconds(200));
    // 4. The end.
    if (const int sig = g_signal.exchange(0); sig != 0 && !ending) {
      ending = true;
      end_code = 128 + sig;
      stop_all(std::string("riseml-elastic got ") + ::strsignal(sig));
    }
    if (first_finish && !ending && now - *first_finish > options.grace) {
      ending = true;
      stop_all("the other nodes finished " +
               std::to_string(std::chrono::duration_cast<std::chrono::seconds>(options.grace).count()) +
               " s ago");
    }
    running = false;
    for (auto& s : steps) {
      if (s.pid <= 0) continue;
      running = true;
      if (s.term_sent != Clock::time_point{} && !s.killed && now - s.term_sent > options.stop_grace) {
        ::kill(s.pid, SIGKILL);
        s.killed = true;
      }
    }
    if (!running && (ending || first_finish)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  discovery.reset();
  // A worker that outlived its srun (stopped, or a stand-in srun's child) may hold the pipe
  // open: its last lines get two seconds, then the driver ends without them.
  const auto until = Clock::now() + std::chrono::seconds(2);
  for (auto& s : steps) {
    while (!*s.output_closed && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (*s.output_closed) s.reader.join();
    else s.reader.detach();
  }
  if (end_code != 0) return end_code;
  if (first_finish) {
    log.say("the job finished: the workers of " + std::to_string(planner.world().size()) +
            " rank(s) of the last world ended well");
    return 0;
  }
  return first_failure.value_or(1);
}

}  // namespace riseml::elastic
