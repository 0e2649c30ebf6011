// Rank 0's watch over the table: a name that some ranks submitted and others did not for
// stall_check is reported (once, through EngineOptions::warn), and after stall_shutdown it
// fails; when every rank is stuck (a thread of each waits on the engine and no handle finished
// for deadlock_shutdown) everything pending fails at once. Its verdicts travel in rank 0's next
// message, so that every rank fails the entry in the same cycle. Each rank also keeps its own
// wait census, for its say on "stuck".
#pragma once

#include "tensor_table.hpp"
#include "wait_census.hpp"
#include "wire.hpp"

#include <riseml/engine/engine_options.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace riseml::engine {

class StallInspector {
 public:
  using Clock = std::chrono::steady_clock;

  // `options.warn` must be set.
  explicit StallInspector(const EngineOptions& options);

  // Where this process's handles count their waits and finishes.
  const std::shared_ptr<WaitCensus>& census() const { return census_; }
  // This rank's say for deadlock detection: a thread has waited on one of the engine's
  // handles, with none finishing, for deadlock_shutdown.
  bool locally_stuck(Clock::time_point now);
  // Rank 0, every cycle: warns about stalled entries and decides which fail. `progressed`:
  // something finished this cycle (the stuck flags are stale then).
  void check(TensorTable& table, const std::vector<bool>& joined, const std::vector<bool>& stuck,
             Clock::time_point now, bool progressed);
  // The verdicts for rank 0's next message.
  std::vector<StallVerdict> take_verdicts() { return std::exchange(outbox_, {}); }
  bool has_verdicts() const { return !outbox_.empty(); }

 private:
  std::chrono::milliseconds stall_check_;
  std::chrono::milliseconds stall_shutdown_;
  std::chrono::milliseconds deadlock_shutdown_;
  std::function<void(const std::string&)> warn_;
  std::shared_ptr<WaitCensus> census_ = std::make_shared<WaitCensus>();
  std::uint64_t census_finished_seen_ = 0;
  std::optional<Clock::time_point> stuck_since_;
  std::vector<StallVerdict> outbox_;
};

}  // namespace riseml::engine
