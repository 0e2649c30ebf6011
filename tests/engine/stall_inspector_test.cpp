// The stall inspector on a table made by hand: the warning once, the verdict after
// stall_shutdown, the deadlock verdict, a barrier that waits for a busy rank, the census.
#include "stall_inspector.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace riseml::engine {
namespace {

using namespace std::chrono_literals;
using Clock = StallInspector::Clock;

TensorMeta meta(OpKind kind = OpKind::allreduce) {
  TensorMeta m;
  m.kind = kind;
  m.shapes = {{4}};
  return m;
}

struct Fixture {
  std::vector<std::string> warnings;
  EngineOptions options(std::chrono::milliseconds check, std::chrono::milliseconds shutdown,
                        std::chrono::milliseconds deadlock) {
    EngineOptions o;
    o.stall_check = check;
    o.stall_shutdown = shutdown;
    o.deadlock_shutdown = deadlock;
    o.warn = [this](const std::string& line) { warnings.push_back(line); };
    return o;
  }
};

TEST(StallInspector, WarnsOnceThenGivesUpAfterTheShutdownTime) {
  Fixture f;
  StallInspector stalls(f.options(1s, 2s, 0s));
  TensorTable table(3);
  const auto t0 = Clock::now();
  table.record("w", 0, meta(), t0);
  const std::vector<bool> joined{false, false, true}, stuck{false, false, false};
  stalls.check(table, joined, stuck, t0 + 500ms, false);
  EXPECT_TRUE(f.warnings.empty());
  stalls.check(table, joined, stuck, t0 + 1500ms, false);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_EQ(f.warnings[0],
            "riseml: stall: allreduce 'w' was submitted by rank 0 but not by rank 1 for 1.5 s (a "
            "rank skipped a collective, or named it differently)");
  EXPECT_FALSE(stalls.has_verdicts());
  stalls.check(table, joined, stuck, t0 + 2500ms, false);
  EXPECT_EQ(f.warnings.size(), 1u);
  const auto verdicts = stalls.take_verdicts();
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(verdicts[0].seq, 0u);
  EXPECT_EQ(verdicts[0].name, "w");
  EXPECT_EQ(verdicts[0].message,
            "riseml: stall: allreduce 'w' was submitted by rank 0 but not by rank 1 for 2.5 s (a "
            "rank skipped a collective, or named it differently); gave up after "
            "RISEML_STALL_SHUTDOWN_S");
  stalls.check(table, joined, stuck, t0 + 3500ms, false);
  EXPECT_FALSE(stalls.has_verdicts());  // one verdict per entry
}

TEST(StallInspector, ADeadlockFailsEverythingWithoutAStallLimit) {
  Fixture f;
  StallInspector stalls(f.options(0s, 0s, 30s));
  TensorTable table(2);
  const auto t0 = Clock::now();
  table.record("a", 0, meta(), t0);
  table.record("b", 1, meta(), t0);
  stalls.check(table, {false, false}, {true, false}, t0, false);
  EXPECT_FALSE(stalls.has_verdicts());
  stalls.check(table, {false, false}, {true, true}, t0, true);  // something just finished
  EXPECT_FALSE(stalls.has_verdicts());
  stalls.check(table, {false, false}, {true, true}, t0 + 100ms, false);
  const auto verdicts = stalls.take_verdicts();
  ASSERT_EQ(verdicts.size(), 2u);
  EXPECT_EQ(verdicts[1].message,
            "riseml: stall: allreduce 'b' was submitted by rank 1 but not by rank 0 for 0.1 s (a "
            "rank skipped a collective, or named it differently); deadlock: every rank is waiting "
            "for a collective that no rank can start, so it gave up (RISEML_DEADLOCK_S)");
  EXPECT_TRUE(f.warnings.empty());
}

TEST(StallInspector, ABarrierWaitingForABusyRankKeepsItsClockStopped) {
  Fixture f;
  StallInspector stalls(f.options(1s, 1s, 0s));
  TensorTable table(2);
  const auto t0 = Clock::now();
  table.record("barrier.0", 0, meta(OpKind::barrier), t0);
  table.record("x", 1, meta(), t0);
  stalls.check(table, {false, false}, {false, false}, t0 + 1500ms, false);
  const auto verdicts = stalls.take_verdicts();
  ASSERT_EQ(verdicts.size(), 1u);  // x only: rank 1 may still come to the barrier
  EXPECT_EQ(verdicts[0].name, "x");
  EXPECT_EQ(table.find("barrier.0", 0)->first_seen, t0 + 1500ms);
}

TEST(StallInspector, StuckWhenAThreadWaitsAndNothingFinishes) {
  Fixture f;
  StallInspector stalls(f.options(0s, 0s, 1s));
  const auto t0 = Clock::now();
  EXPECT_FALSE(stalls.locally_stuck(t0));  // nobody waits
  stalls.census()->waiting = 1;
  EXPECT_FALSE(stalls.locally_stuck(t0));
  EXPECT_TRUE(stalls.locally_stuck(t0 + 1s));
  stalls.census()->finished = 1;  // a handle finished: the clock starts again, at the next look
  EXPECT_FALSE(stalls.locally_stuck(t0 + 2s));
  EXPECT_FALSE(stalls.locally_stuck(t0 + 2500ms));
  EXPECT_FALSE(stalls.locally_stuck(t0 + 3s));
  EXPECT_TRUE(stalls.locally_stuck(t0 + 3500ms));
  StallInspector off(f.options(0s, 0s, 0s));
  off.census()->waiting = 1;
  EXPECT_FALSE(off.locally_stuck(t0 + 1h));
}

}  // namespace
}  // namespace riseml::engine
