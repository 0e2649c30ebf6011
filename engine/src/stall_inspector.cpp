#include "stall_inspector.hpp"

#include "agreement.hpp"
#include "naming.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace riseml::engine {

StallInspector::StallInspector(const EngineOptions& options)
    : stall_check_(options.stall_check),
      stall_shutdown_(options.stall_shutdown),
      deadlock_shutdown_(options.deadlock_shutdown),
      warn_(options.warn) {}

bool StallInspector::locally_stuck(Clock::time_point now) {
  if (deadlock_shutdown_.count() == 0) return false;
  const std::uint64_t finished = census_->finished.load();
  if (census_->waiting.load() == 0 || finished != census_finished_seen_) {
    census_finished_seen_ = finished;
    stuck_since_.reset();
    return false;
  }
  if (!stuck_since_) stuck_since_ = now;
  return now - *stuck_since_ >= deadlock_shutdown_;
}

void StallInspector::check(TensorTable& table, const std::vector<bool>& joined,
                           const std::vector<bool>& stuck, Clock::time_point now, bool progressed) {
  // Every rank has a thread waiting on this engine and none of its handles has finished for
  // deadlock_shutdown: what is pending cannot become ready (the waiting threads cannot submit
  // the rest), so it fails now, on every rank, whatever stall_shutdown says. Not in a cycle
  // where something finished: the flags were sent before, and a rank whose collective just
  // failed (a verdict) is about to go on, perhaps to the barrier the others wait in.
  const bool deadlocked = deadlock_shutdown_.count() > 0 && !progressed && !table.empty() &&
                          std::all_of(stuck.begin(), stuck.end(), [](bool s) { return s; });
  if (stall_check_.count() == 0 && !deadlocked) return;
  for (auto& [seq, g] : table) {
    std::vector<int> have, missing;
    for (std::size_t r = 0; r < joined.size(); ++r) {
      if (g.metas[r])
        have.push_back(static_cast<int>(r));
      else if (!joined[r])
        missing.push_back(static_cast<int>(r));
    }
    // A barrier's clock stops while a rank it waits for is busy with a collective of its own:
    // that one stalls and gives up first, and the rank may then still come (a test that failed
    // on some ranks only goes on to the same tearDown barrier as the others).
    const bool barrier_waits_for_busy =
        reference(g).kind == OpKind::barrier && busy_elsewhere(table, missing, g);
    if (barrier_waits_for_busy) g.first_seen = now;
    const auto age = now - g.first_seen;
    auto message = [&] {  // built only when it is said (rank 0 checks every cycle)
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.1f", std::chrono::duration<double>(age).count());
      return "riseml: stall: " + std::string(kind_name(reference(g).kind)) + " '" + g.name +
             "' was submitted by " + rank_list(have) + " but not by " + rank_list(missing) + " for " +
             secs + " s (a rank skipped a collective, or named it differently)";
    };
    // In a deadlock a barrier whose missing ranks wait on another collective is left alone: that
    // one fails, and its ranks can still come to the barrier (as with the stall limit below).
    if (deadlocked && !g.verdict_sent && !barrier_waits_for_busy) {
      g.verdict_sent = true;
      outbox_.push_back({seq, g.name, message() + "; deadlock: every rank is waiting for a collective that "
                                                  "no rank can start, so it gave up (RISEML_DEADLOCK_S)"});
      continue;
    }
    if (stall_check_.count() == 0 || age < stall_check_) continue;
    const std::string msg = message();
    if (!g.warned) {
      g.warned = true;
      warn_(msg);
    }
    if (stall_shutdown_.count() > 0 && age >= stall_shutdown_ && !g.verdict_sent) {
      g.verdict_sent = true;
      outbox_.push_back({seq, g.name, msg + "; gave up after RISEML_STALL_SHUTDOWN_S"});
    }
  }
}

}  // namespace riseml::engine
