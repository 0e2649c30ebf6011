#include "world_planner.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

namespace riseml::elastic {

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

namespace {
std::string seconds_text(std::chrono::steady_clock::duration d) {
  const double s = std::chrono::duration<double>(d).count();
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", s);
  return text;
}
}  // namespace

WorldPlanner::WorldPlanner(Limits limits, HostHealth& health) : limits_(limits), health_(health) {}

bool WorldPlanner::in_world(int rank) const { return std::binary_search(world_.begin(), world_.end(), rank); }

bool WorldPlanner::gone(int rank) const {
  const auto it = workers_.find(rank);
  return it == workers_.end() || it->second.state == WorkerState::gone;
}

std::string WorldPlanner::host_of(int rank) const {
  const auto it = workers_.find(rank);
  return it == workers_.end() ? std::string() : it->second.host;
}

bool WorldPlanner::host_has_live_workers(const std::string& host) const {
  for (const auto& [rank, w] : workers_)
    if (w.host == host && w.alive) return true;
  return false;
}

std::vector<int> WorldPlanner::take_out(const std::string& host) {
  std::vector<int> leaving;
  for (auto& [rank, w] : workers_)
    if (w.host == host && w.state != WorkerState::gone) {
      w.state = WorkerState::gone;
      leaving.push_back(rank);
    }
  return leaving;
}

std::string WorldPlanner::blacklist(const std::string& host, const std::string& why,
                                    Clock::time_point now) {
  const std::vector<int> leaving = take_out(host);
  failed_ = removed_ = dirty_ = true;
  const auto out = health_.blacklist(host, now);
  return "node " + host + " is blacklisted (" + why + ")" +
         (out ? ", for " + seconds_text(*out) : std::string()) +
         (leaving.empty() ? std::string() : "; its workers leave: rank(s) " + rank_list(leaving));
}

std::vector<std::string> WorldPlanner::hosts_found(const std::vector<HostSlots>& hosts) {
  std::vector<std::string> notes;
  std::vector<HostSlots> ordered;
  // The hosts of the last discovery keep their places; new ones come last (Horovod's order).
  for (const auto& old : hosts_)
    for (const auto& h : hosts)
      if (h.host == old.host) ordered.push_back(h);
  for (const auto& h : hosts)
    if (std::none_of(hosts_.begin(), hosts_.end(), [&](const HostSlots& o) { return o.host == h.host; })) {
      ordered.push_back(h);
      if (!hosts_.empty() || !world_.empty())
        notes.push_back("discovery: node " + h.host + " added (" + std::to_string(h.slots) + " slot(s))");
      dirty_ = true;
    }
  for (const auto& old : hosts_) {
    if (std::any_of(hosts.begin(), hosts.end(), [&](const HostSlots& h) { return h.host == old.host; }))
      continue;
    const std::vector<int> leaving = take_out(old.host);
    notes.push_back("discovery: node " + old.host + " removed" +
                    (leaving.empty() ? std::string() : "; its workers leave: rank(s) " + rank_list(leaving)));
    if (!leaving.empty()) removed_ = true;
    dirty_ = true;
  }
  hosts_ = std::move(ordered);
  return notes;
}

std::vector<std::string> WorldPlanner::worker_exited(int rank, bool ok, Clock::time_point now) {
  const auto it = workers_.find(rank);
  if (it == workers_.end()) return {};
  Worker& w = it->second;
  w.alive = false;
  dirty_ = true;  // a host without live workers may start new ones
  if (ok || w.state == WorkerState::gone) return {};
  return {blacklist(w.host, "rank " + std::to_string(rank) + " failed", now)};
}

std::vector<std::string> WorldPlanner::failure_reported(const FailureReport& report,
                                                        Clock::time_point now) {
  std::vector<std::string> notes;
  // The reporter formed the last announced world: it needs a new one, even an equal one.
  if (report.world >= announced_ - 1) renew_ = dirty_ = true;
  for (int culprit : report.culprits) {
    const auto it = workers_.find(culprit);
    if (it == workers_.end() || it->second.state == WorkerState::gone) continue;
    if (it->second.alive) stop_pending_.push_back(culprit);
    notes.push_back(blacklist(it->second.host,
                              "rank " + std::to_string(report.rank) + " blamed rank " +
                                  std::to_string(culprit) + " for its failure",
                              now));
  }
  if (report.culprits.empty()) failed_ = true;
  return notes;
}

void WorldPlanner::worker_ready(int rank) {
  const auto it = workers_.find(rank);
  if (it != workers_.end() && it->second.state == WorkerState::joining) {
    it->second.state = WorkerState::ready;
    dirty_ = true;
  }
}

bool WorldPlanner::wants_decision(Clock::time_point now) const {
  if (dirty_ || short_since_) return true;
  for (const auto& [rank, w] : workers_)  // a joiner's time may run out
    if (w.alive && w.state == WorkerState::joining) return true;
  // A listed host whose cooldown ends may start workers again.
  return std::any_of(hosts_.begin(), hosts_.end(), [&](const HostSlots& h) {
    return health_.failures(h.host) > 0 && health_.usable(h.host, now) && !host_has_live_workers(h.host) &&
           !finishing_;
  });
}

WorldPlanner::Decision WorldPlanner::decide(Clock::time_point now) {
  Decision d;
  dirty_ = false;
  // Blamed ranks that still run are stopped, whatever else happens.
  for (int r : std::exchange(stop_pending_, {}))
    if (workers_.count(r) && workers_[r].alive) d.stop_now.push_back(r);
  if (finishing_) return d;

  // Joiners that are not up in time (a hung start): their host is out, the promise kept without.
  std::set<std::string> late;
  for (const auto& [rank, w] : workers_)
    if (w.alive && w.state == WorkerState::joining && now - w.started > limits_.start_timeout)
      late.insert(w.host);
  for (const auto& host : late) {
    for (const auto& [rank, w] : workers_)
      if (w.host == host && w.alive && w.state != WorkerState::gone) d.stop_now.push_back(rank);
    d.notes.push_back(blacklist(host, "its workers were not up within " + seconds_text(limits_.start_timeout) + " (--start-timeout)", now));
  }

  const bool first = announced_ == 0;
  std::vector<int> members;
  if (first) {  // the first world: every worker started so far (it may wait for the minimum)
    for (const auto& [rank, w] : workers_)
      if (w.state == WorkerState::member) members.push_back(rank);
  } else {
    for (int r : world_)
      if (!gone(r)) members.push_back(r);
  }
  // Joiners enter when every worker of their host is up.
  std::map<int, std::vector<int>> joiners;  // node id -> ranks
  std::set<int> unready_nodes;
  for (const auto& [rank, w] : workers_) {
    if (w.state == WorkerState::ready) joiners[w.node_id].push_back(rank);
    if (w.state == WorkerState::joining) unready_nodes.insert(w.node_id);
  }
  int pending = 0;
  for (const auto& [rank, w] : workers_) pending += w.state == WorkerState::joining;
  for (auto& [node, ranks] : joiners) {
    if (unready_nodes.count(node)) {
      pending += static_cast<int>(ranks.size());
      continue;
    }
    for (int r : ranks) {
      workers_[r].state = WorkerState::member;
      members.push_back(r);
    }
    added_ = true;
  }
  std::sort(members.begin(), members.end());

  // New workers on hosts without any, up to the maximum.
  bool joiners_started = false;
  // They hear at once that a world with them comes: the one after any announced now.
  const auto promise = [&] {
    if (joiners_started && !promised_) d.pending = promised_ = announced_;
  };
  int capacity = limits_.max_ranks - static_cast<int>(members.size()) - pending;
  for (const auto& h : hosts_) {
    if (capacity <= 0) break;
    if (!health_.usable(h.host, now) || host_has_live_workers(h.host)) continue;
    StartWorkers s;
    s.host = h.host;
    const auto id = node_ids_.find(h.host);
    s.node_id = id != node_ids_.end() ? id->second : (node_ids_[h.host] = next_node_id_++);
    s.rank_base = next_rank_;
    s.count = std::min(h.slots, capacity);
    s.joining = !first;
    next_rank_ += s.count;
    capacity -= s.count;
    for (int r = s.rank_base; r < s.rank_base + s.count; ++r) {
      workers_[r] = Worker{h.host, s.node_id, first ? WorkerState::member : WorkerState::joining, true, now};
      if (first) members.push_back(r);
    }
    if (health_.failures(h.host) > 0)
      d.notes.push_back("node " + h.host + " is back after its cooldown");
    joiners_started = joiners_started || !first;
    d.start.push_back(std::move(s));
  }
  // A world was promised and no joiner is on its way any more (they joined, or died): it is
  // announced even if its members did not change.
  bool joiners_on_the_way = false;
  for (const auto& [rank, w] : workers_)
    joiners_on_the_way = joiners_on_the_way || (w.alive && (w.state == WorkerState::joining || w.state == WorkerState::ready));
  if (promised_ && !joiners_on_the_way) renew_ = true;
  std::sort(members.begin(), members.end());

  if (static_cast<int>(members.size()) < limits_.min_ranks) {
    bool any_alive = false, may_come = limits_.hosts_may_appear;
    for (const auto& [rank, w] : workers_) {
      any_alive = any_alive || w.alive;
      may_come = may_come || (w.alive && w.state != WorkerState::gone && w.state != WorkerState::member);
    }
    for (const auto& h : hosts_)
      may_come = may_come || health_.cooling(h.host, now) ||
                 (health_.usable(h.host, now) && !host_has_live_workers(h.host));
    // No member left: nobody holds the committed state (workers of blacklisted hosts are out).
    if (!first && (members.empty() || !any_alive)) {
      d.end_job = "no worker is left in the world (every host is blacklisted or gone)";
      return d;
    }
    if (!may_come && d.start.empty()) {
      d.end_job = "fewer than the minimum of " + std::to_string(limits_.min_ranks) +
                  " workers remain (" + std::to_string(members.size()) +
                  ") and no host can add more (no spare, no discovery, no cooldown)";
      return d;
    }
    if (!short_since_) {
      short_since_ = now;
      d.notes.push_back("waiting for hosts: " + std::to_string(members.size()) + " worker(s), the minimum is " +
                        std::to_string(limits_.min_ranks) + " (up to " + seconds_text(limits_.elastic_timeout) + ")");
    }
    if (now - *short_since_ >= limits_.elastic_timeout) {
      d.end_job = "fewer than the minimum of " + std::to_string(limits_.min_ranks) + " workers (" +
                  std::to_string(members.size()) + ") for " + seconds_text(limits_.elastic_timeout) +
                  " (--elastic-timeout)";
    }
    promise();
    return d;
  }
  short_since_.reset();

  if (first || members != world_ || renew_) {
    if (!first) ++resets_;
    if (!first && limits_.reset_limit && resets_ > *limits_.reset_limit) {
      d.end_job = "the world was re-formed " + std::to_string(resets_) +
                  " times, more than the reset limit of " + std::to_string(*limits_.reset_limit) +
                  " (--reset-limit)";
      return d;
    }
    Announcement a;
    a.members = members;
    a.why = first ? "start" : failed_ ? "failure" : (added_ && removed_) ? "mixed" : added_ ? "added" : "removed";
    world_ = std::move(members);
    if (promised_ && announced_ >= *promised_) promised_.reset();
    ++announced_;
    renew_ = added_ = removed_ = failed_ = false;
    d.announce = std::move(a);
  }
  promise();
  return d;
}

}  // namespace riseml::elastic
