// What riseml-launch does when a rank's PMIx client goes without PMIx_Finalize: give PMIx its
// count of local processes back only when the rank's process lives on (a forked child went).
#include "lost_client_recount.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace riseml::launch {
namespace {

TEST(LostClientRecount, AliveProcessGetsTheCountBack) {
  int count = 4;
  EXPECT_EQ(LostClientRecount::count_after_loss(count, true), 4);
  EXPECT_EQ(count, 4);
}

TEST(LostClientRecount, DeadProcessLeavesPmixsLowerCount) {
  int count = 4;
  EXPECT_EQ(LostClientRecount::count_after_loss(count, false), 3);
  EXPECT_EQ(count, 3);
  int none = 0;
  EXPECT_EQ(LostClientRecount::count_after_loss(none, false), 0);
}

TEST(LostClientRecount, LossesOfLiveAndDeadRanksInEitherOrderEndAtTheRightCount) {
  // PMIx lowers its count at every loss; what is given back after the last loss is what counts.
  for (bool live_first : {true, false}) {
    int count = 4;
    int pmix = 4;
    for (bool alive : {live_first, !live_first}) {
      --pmix;
      pmix = LostClientRecount::count_after_loss(count, alive);
    }
    EXPECT_EQ(pmix, 3) << "live first: " << live_first;
  }
}

TEST(LostClientRecount, ProcessAliveTellsRunningFromEndedAndReaped) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  EXPECT_TRUE(LostClientRecount::process_alive(child));
  kill(child, SIGKILL);
  // Ended but not reaped (a zombie): not alive, and still not reaped by asking.
  siginfo_t ended{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &ended, WEXITED | WNOWAIT), 0);
  EXPECT_FALSE(LostClientRecount::process_alive(child));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_FALSE(LostClientRecount::process_alive(child));
}

TEST(LostClientRecount, NotOurChildIsNotAlive) {
  EXPECT_FALSE(LostClientRecount::process_alive(1));
}

}  // namespace
}  // namespace riseml::launch
