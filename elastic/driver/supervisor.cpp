#include "supervisor.hpp"

#include "piped_child.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <numeric>
#include <memory>
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

std::atomic<int> g_signal{0};
void on_signal(int sig) { g_signal = sig; }

// srun --label writes "<task>: text" (the task number padded with spaces); the job rank is
// the node's first rank plus the task.
std::string relabel(const std::string& line, const NodePlan& node) {
  std::size_t at = 0;
  while (at < line.size() && line[at] == ' ') ++at;
  std::size_t digits = at;
  while (digits < line.size() && digits - at < 7 && line[digits] >= '0' && line[digits] <= '9') ++digits;
  if (digits > at && line.compare(digits, 2, ": ") == 0)
    return std::to_string(node.rank_base + std::stoi(line.substr(at, digits - at))) + ": " +
           line.substr(digits + 2);
  return node.node + ": " + line;
}

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

struct Step {
  NodePlan plan;
  pid_t pid = -1;
  enum class State { running, finished, failed, left } state = State::running;
  std::thread reader;
  std::shared_ptr<std::atomic<bool>> output_closed = std::make_shared<std::atomic<bool>>(false);
  std::chrono::steady_clock::time_point term_sent{};
  bool killed = false;
  bool joining = false;  // a spare started into a running world, not in a formed world yet
};

// Forks the node's srun with its output on a pipe; the reader thread relabels it.
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
  const pid_t pid = child.pid;
  step.pid = pid;
  const int fd = child.output;
  step.reader = std::thread([fd, plan = step.plan, &log, closed = step.output_closed] {
    std::string pending;
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      pending.append(buf, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
        log.worker_line(relabel(pending.substr(0, nl), plan));
        pending.erase(0, nl + 1);
      }
    }
    if (!pending.empty()) log.worker_line(relabel(pending, plan));
    ::close(fd);
    *closed = true;
  });
}

}  // namespace

int supervise(const DriverOptions& options, const JobPlan& plan, const std::string& job_id,
              DriverLog& log, const SupervisorLinks& links) {
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGHUP, &sa, nullptr);

  // A deque: the reader threads and the loop keep references to steps while spares join.
  std::deque<Step> steps(plan.workers.size());
  std::deque<std::string> spares(plan.spares.begin(), plan.spares.end());
  int next_rank = plan.size;
  int next_node_id = static_cast<int>(plan.workers.size());
  std::vector<int> first_world(static_cast<std::size_t>(plan.size));
  std::iota(first_world.begin(), first_world.end(), 0);
  links.announce_world(first_world);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    steps[i].plan = plan.workers[i];
    start(steps[i], srun_command(plan.workers[i], options, job_id),
          links.node_environment(plan.workers[i], false), log);
  }
  std::string names;
  for (const auto& s : steps) names += (names.empty() ? "" : ", ") + s.plan.node;
  log.say("started " + std::to_string(plan.size) + " workers on " + std::to_string(steps.size()) +
          " nodes (" + names + "), " + std::to_string(options.tasks_per_node) + " per node; the job "
          "ends when fewer than " + std::to_string(options.min_workers) + " nodes train");
  if (!plan.spares.empty()) {
    std::string spare_names;
    for (const auto& s : plan.spares) spare_names += (spare_names.empty() ? "" : ", ") + s;
    log.say("spare nodes: " + spare_names + " (one joins when a node leaves)");
  }

  std::vector<int> world = first_world;  // the last world the workers formed
  bool ending = false;
  std::optional<std::chrono::steady_clock::time_point> first_finish;
  // A spare's workers, with new ranks (ranks are never reused), into the world announced for
  // the others' next commit.
  const auto start_spare = [&] {
    if (spares.empty() || ending || first_finish) return;
    NodePlan spare{spares.front(), next_node_id++, next_rank, options.tasks_per_node};
    spares.pop_front();
    next_rank += spare.tasks;
    std::vector<int> next = world;
    std::string ranks;
    for (int r = spare.rank_base; r < spare.rank_base + spare.tasks; ++r) {
      next.push_back(r);
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    }
    links.announce_world(next);
    Step& step = steps.emplace_back();
    step.plan = spare;
    step.joining = true;
    start(step, srun_command(spare, options, job_id), links.node_environment(spare, true), log);
    log.say("spare node " + spare.node + " joins as rank(s) " + ranks + ": the world of " +
            std::to_string(next.size()) + " workers forms at the others' next commit");
  };
  std::optional<int> first_failure;
  int end_code = 0;
  const auto training = [&] {
    int n = 0;
    for (const auto& s : steps) n += s.state == Step::State::running || s.state == Step::State::finished;
    return n;
  };
  const auto stop_running = [&](const std::string& why) {
    for (auto& s : steps)
      if (s.pid > 0 && s.term_sent == std::chrono::steady_clock::time_point{}) {
        log.say("stopping the workers on " + s.plan.node + ": " + why);
        ::kill(s.pid, SIGTERM);
        s.term_sent = std::chrono::steady_clock::now();
      }
  };

  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      bool try_next_spare = false;
      for (auto& s : steps) {
        if (s.pid != pid) continue;
        s.pid = -1;
        const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (ok && s.state == Step::State::running) {
          s.state = Step::State::finished;
          log.say("node " + s.plan.node + ": its workers finished");
          if (!first_finish) first_finish = std::chrono::steady_clock::now();
        } else if (s.term_sent != std::chrono::steady_clock::time_point{}) {
          log.say("node " + s.plan.node + ": its step ended (" + describe_status(status) + ")");
        } else if (!ok && s.joining) {
          // It never joined: the others must not wait for it. They keep the world they have
          // (announced anew), and the next spare, if any, is tried.
          s.joining = false;
          s.state = Step::State::failed;
          log.say("spare node " + s.plan.node + " failed before it joined (" + describe_status(status) +
                  "): the world stays " + std::to_string(world.size()) + " workers");
          links.announce_world(world);
          try_next_spare = true;  // after this loop: it adds a step
        } else if (!ok) {
          if (s.state == Step::State::running) {
            s.state = Step::State::failed;
            log.say("node " + s.plan.node + " left: its step ended with " + describe_status(status) +
                    "; " + std::to_string(training()) + " of " + std::to_string(steps.size()) +
                    " nodes still train");
          }
          if (!first_failure) first_failure = exit_code_of(status);
        }
      }
      if (try_next_spare) start_spare();
      continue;
    }
    for (const WorldChange& change : links.take_world_changes()) {
      // The driver started each rank on a known node: count nodes by that, not by host names.
      const auto step_of_rank = [&](int r) -> Step* {
        for (auto& s : steps)
          if (r >= s.plan.rank_base && r < s.plan.rank_base + s.plan.tasks) return &s;
        return nullptr;
      };
      std::set<Step*> kept, gone;
      for (int r : change.members) kept.insert(step_of_rank(r));
      std::string left, joined, nodes;
      for (int r : change.left) {
        left += (left.empty() ? "" : ", ") + std::to_string(r);
        gone.insert(step_of_rank(r));
      }
      for (int r : change.joined) joined += (joined.empty() ? "" : ", ") + std::to_string(r);
      kept.erase(nullptr);
      gone.erase(nullptr);
      for (const Step* s : kept) nodes += (nodes.empty() ? "" : ", ") + s->plan.node;
      log.say("the world re-formed: " + std::to_string(change.members.size()) + " workers on " +
              std::to_string(kept.size()) + " node(s) (" + nodes + ")" +
              (left.empty() ? "" : "; left: rank(s) " + left) +
              (joined.empty() ? "" : "; joined: rank(s) " + joined));
      // A node none of whose ranks is in the new world has left, even if its step still runs
      // (a node cut off by its link).
      for (Step* s : gone)
        if (!kept.count(s) && s->state == Step::State::running) {
          s->state = Step::State::left;
          log.say("node " + s->plan.node + " left: the survivors re-formed without its workers");
        }
      if (static_cast<int>(kept.size()) < options.min_workers && !ending) {
        ending = true;
        end_code = 1;
        log.say("fewer than --min-workers " + std::to_string(options.min_workers) +
                " nodes remain in the world: ending the job");
        stop_running("the job ends");
      }
      // A node left and a spare waits: its workers join with new ranks (ranks are never
      // reused), into the world announced for the others' next commit.
      world = change.members;
      for (auto& s : steps)
        if (s.joining && std::binary_search(world.begin(), world.end(), s.plan.rank_base))
          s.joining = false;
      if (!change.left.empty()) start_spare();
    }
    if (!ending && !first_finish && training() < options.min_workers) {
      ending = true;
      end_code = 1;
      log.say("fewer than --min-workers " + std::to_string(options.min_workers) +
              " nodes still train: ending the job");
      stop_running("the job ends");
    }
    if (const int sig = g_signal.exchange(0); sig != 0 && !ending) {
      ending = true;
      end_code = 128 + sig;
      stop_running(std::string("riseml-elastic got ") + ::strsignal(sig));
    }
    if (first_finish && !ending && std::chrono::steady_clock::now() - *first_finish > options.grace) {
      ending = true;
      stop_running("the other nodes finished " +
                   std::to_string(std::chrono::duration_cast<std::chrono::seconds>(options.grace).count()) +
                   " s ago");
    }
    const auto now = std::chrono::steady_clock::now();
    bool any = false;
    for (auto& s : steps) {
      if (s.pid <= 0) continue;
      any = true;
      if (s.term_sent != std::chrono::steady_clock::time_point{} && !s.killed &&
          now - s.term_sent > options.stop_grace) {
        ::kill(s.pid, SIGKILL);
        s.killed = true;
      }
    }
    if (!any) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // A worker that outlived its srun (stopped, or a stand-in srun's child) may hold the pipe
  // open: its last lines get two seconds, then the driver ends without them.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (auto& s : steps) {
    while (!*s.output_closed && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (*s.output_closed) s.reader.join();
    else s.reader.detach();
  }
  if (end_code != 0) return end_code;
  if (first_finish) {
    log.say("the job finished: the workers of " + std::to_string(training()) + " node(s) ended well");
    return 0;
  }
  return first_failure.value_or(1);
}

}  // namespace riseml::elastic
