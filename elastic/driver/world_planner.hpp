// The elastic driver's decisions, apart from processes and sockets: which hosts run workers
// with which ranks (ranks are never reused), which ranks are gone, the world to announce next,
// and when the job must end. Horovod's elastic rules:
//   - a worker that fails (exits nonzero, or is blamed by a survivor's failure report)
//     blacklists its host (HostHealth): every worker of that host leaves the world;
//   - hosts the discovery no longer lists leave; hosts it adds (and blacklisted hosts whose
//     cooldown ended) start workers, up to the maximum; the workers hear at once that a world
//     with them is coming (pending), and it is announced once all of a host's workers are up
//     (ready), or without them if they die on the way;
//   - a survivor that reports a failure of the world it formed gets a new world even if no
//     rank left it (every announcement after the first is a reset, counted against the limit);
//   - fewer workers than the minimum: wait while hosts may still come (a discovery script, a
//     spare host, a cooldown), up to the elastic timeout; end at once when none may come or no
//     worker is left;
//   - a host whose joining workers are not all up within the start timeout is blacklisted (the
//     others wait for the world with them).
#pragma once

#include "host_health.hpp"
#include "host_list.hpp"

#include <riseml/elastic/store_server.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace riseml::elastic {

// "0, 1, 5", for log lines.
std::string rank_list(const std::vector<int>& ranks);

struct StartWorkers {
  std::string host;
  int node_id = 0;    // hosts numbered in the order they first ran workers
  int rank_base = 0;  // the first of `count` new ranks
  int count = 1;
  bool joining = false;  // into a running job (a world with them is announced when they are up)
};

struct Announcement {
  std::vector<int> members;  // sorted job ranks
  std::string why;           // start, added, removed, mixed or failure
};

class WorldPlanner {
 public:
  using Clock = std::chrono::steady_clock;
  struct Limits {
    int min_ranks = 1;
    int max_ranks = 1;
    std::optional<int> reset_limit;
    Clock::duration elastic_timeout = std::chrono::minutes(10);
    Clock::duration start_timeout = std::chrono::minutes(2);  // for a joiner to be up
    bool hosts_may_appear = false;  // a discovery script may list new hosts later
  };
  WorldPlanner(Limits limits, HostHealth& health);

  // What happened. Each returns log lines (hosts blacklisted, added, removed).
  std::vector<std::string> hosts_found(const std::vector<HostSlots>& hosts);
  std::vector<std::string> worker_exited(int rank, bool ok, Clock::time_point now);
  std::vector<std::string> failure_reported(const FailureReport& report, Clock::time_point now);
  void worker_ready(int rank);
  // The job is finishing (a host's workers ended well): start no one, announce nothing.
  void finishing() { finishing_ = true; }

  struct Decision {
    std::vector<StartWorkers> start;
    std::optional<Announcement> announce;
    // Workers joined a running job: the number of the world that will have them (the workers
    // re-form at their next commit and wait for it).
    std::optional<long long> pending;
    std::vector<int> stop_now;           // blamed ranks that still run: stop them
    std::optional<std::string> end_job;  // the job cannot go on: why
    std::vector<std::string> notes;      // log lines
  };
  // What to do now. The caller starts the workers, announces the world (the store numbers the
  // announcements from 0, as the planner counts them) and stops the ranks.
  Decision decide(Clock::time_point now);
  // Inputs arrived since the last decide() that may change the world, the job waits for hosts,
  // or a blacklisted host's cooldown has ended: decide (again).
  bool wants_decision(Clock::time_point now) const;

  const std::vector<int>& world() const { return world_; }
  bool in_world(int rank) const;
  bool gone(int rank) const;
  std::string host_of(int rank) const;
  int resets() const { return resets_; }

 private:
  enum class WorkerState { joining, ready, member, gone };
  struct Worker {
    std::string host;
    int node_id = 0;
    WorkerState state = WorkerState::member;
    bool alive = true;
    Clock::time_point started{};
  };
  // Every worker of `host` still in (or joining) the world leaves it; returns their ranks.
  std::vector<int> take_out(const std::string& host);
  // take_out() for a failure, and HostHealth's blacklist; returns the log line.
  std::string blacklist(const std::string& host, const std::string& why, Clock::time_point now);
  bool host_has_live_workers(const std::string& host) const;

  Limits limits_;
  HostHealth& health_;
  std::vector<HostSlots> hosts_;  // the last discovery's, in assignment order
  std::map<int, Worker> workers_;
  std::vector<int> world_;
  long long announced_ = 0;  // announcements so far; the last one's number is announced_ - 1
  int resets_ = 0;
  bool dirty_ = true;
  bool renew_ = false;  // a survivor failed in the last announced world
  bool added_ = false, removed_ = false, failed_ = false;
  bool finishing_ = false;
  int next_rank_ = 0;
  int next_node_id_ = 0;
  std::map<std::string, int> node_ids_;
  std::vector<int> stop_pending_;  // blamed ranks to stop at the next decide()
  std::optional<long long> promised_;  // the world number told as pending, not announced yet
  std::optional<Clock::time_point> short_since_;
};

}  // namespace riseml::elastic
