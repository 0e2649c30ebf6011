// The rank blamed for a failure: a death by a signal before error exits, else the first seen.
#include "failure_blame.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

namespace riseml::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

const Clock::time_point kStart = Clock::now();

RankFailure exited(int rank, int status, int at_ms) {
  return {rank, 1000 + rank, W_EXITCODE(status, 0), kStart + milliseconds(at_ms)};
}

RankFailure killed(int rank, int signal_number, int at_ms) {
  return {rank, 1000 + rank, W_EXITCODE(0, signal_number), kStart + milliseconds(at_ms)};
}

std::vector<int> ranks_of(const std::vector<RankFailure>& failures) {
  std::vector<int> ranks;
  for (const RankFailure& failure : failures) ranks.push_back(failure.rank);
  return ranks;
}

TEST(FailureBlame, TheFirstErrorExitIsTheCause) {
  EXPECT_EQ(ranks_of(blame_order({exited(2, 1, 0), exited(0, 1, 5), exited(1, 3, 9)})),
            (std::vector<int>{2, 0, 1}));
}

TEST(FailureBlame, ObservationTimeNotArgumentOrderDecides) {
  EXPECT_EQ(ranks_of(blame_order({exited(0, 1, 7), exited(1, 1, 3)})), (std::vector<int>{1, 0}));
}

TEST(FailureBlame, ASignalDeathOutranksEarlierErrorExits) {
  // Rank 3 was killed; ranks 2 and 0 noticed and exited 1, and were reaped first.
  EXPECT_EQ(ranks_of(blame_order({exited(2, 1, 0), exited(0, 1, 1), killed(3, SIGKILL, 40)})),
            (std::vector<int>{3, 2, 0}));
}

TEST(FailureBlame, AmongSignalDeathsTheFirstIsTheCause) {
  EXPECT_EQ(
      ranks_of(blame_order({exited(1, 1, 0), killed(3, SIGSEGV, 10), killed(0, SIGKILL, 20)})),
      (std::vector<int>{3, 1, 0}));
}

TEST(FailureBlame, SigpipeIsAConsequenceNotACause) {
  EXPECT_FALSE(is_likely_cause(W_EXITCODE(0, SIGPIPE)));
  EXPECT_TRUE(is_likely_cause(W_EXITCODE(0, SIGKILL)));
  EXPECT_FALSE(is_likely_cause(W_EXITCODE(1, 0)));
  EXPECT_EQ(ranks_of(blame_order({exited(1, 1, 0), killed(2, SIGPIPE, 10)})),
            (std::vector<int>{1, 2}));
}

TEST(FailureBlame, AnErrorExitWaitsForTheWindowWhileRanksRun) {
  std::vector<RankFailure> failures{exited(2, 1, 0)};
  EXPECT_FALSE(cause_is_settled(failures, kStart + kBlameWindow - milliseconds(1), true));
  EXPECT_TRUE(cause_is_settled(failures, kStart + kBlameWindow, true));
}

TEST(FailureBlame, NoRankLeftSettlesAtOnce) {
  EXPECT_TRUE(cause_is_settled({exited(2, 1, 0)}, kStart, false));
}

TEST(FailureBlame, ASignalDeathSettlesAtOnce) {
  EXPECT_TRUE(cause_is_settled({killed(3, SIGKILL, 0)}, kStart, true));
  EXPECT_TRUE(
      cause_is_settled({exited(2, 1, 0), killed(3, SIGKILL, 5)}, kStart + milliseconds(5), true));
  // A SIGPIPE death could still be outranked.
  EXPECT_FALSE(cause_is_settled({killed(3, SIGPIPE, 0)}, kStart, true));
}

}  // namespace
}  // namespace riseml::launch
