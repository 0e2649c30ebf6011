// When anything goes wrong, riseml-launch ends every rank within a bounded time, says which
// rank failed and how, exits non-zero, and leaves no process and no file behind.
#include <signal.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "probe_report.hpp"
#include "launcher_test.hpp"
#include "spawned_process.hpp"
#include "test_programs.hpp"

namespace riseml::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class LauncherFailure : public LauncherTest {
 protected:
  // Runs riseml-launch with `arguments`, the TMPDIR of this test.
  ProcessResult launch(const std::vector<std::string>& arguments,
                       milliseconds timeout = seconds(45)) {
    std::vector<std::string> argv{kLaunchProgram};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    return run_process(argv, {{"TMPDIR", tmpdir_.path()}}, timeout);
  }


  static bool contains(const std::string& text, const std::string& pattern) {
    return std::regex_search(text, std::regex(pattern));
  }

  // A job of 4 shell ranks in which rank 3 is killed by SIGKILL and rank 2, noticing, exits 1
  // (as a rank's peers do when it dies); ranks 0 and 1 wait to be stopped. `exit_reaped_first`:
  // rank 3 dies only once the launcher has reaped rank 2 (as a big process that is slow to
  // die is reaped after a peer's quick exit); otherwise rank 2 exits only once rank 3 is reaped.
  ProcessResult launch_kill_and_exit(bool exit_reaped_first) {
    std::string rank_3 = exit_reaped_first ? "touch $d/dying; reaped 2; kill -9 $$" : "kill -9 $$";
    std::string rank_2 = exit_reaped_first ? "wait_for dying; exit 1" : "reaped 3; exit 1";
    std::string script = "d=" + tmpdir_.path() + "/ranks; mkdir -p $d\n";
    script += "echo $$ > $d/pid.$PMIX_RANK.tmp && mv $d/pid.$PMIX_RANK.tmp $d/pid.$PMIX_RANK\n";
    script += "wait_for() { until [ -e $d/$1 ]; do sleep 0.01; done; }\n";
    // kill -0 still reaches a zombie: it fails only once the launcher has reaped the rank.
    script +=
        "reaped() { p=$(cat $d/pid.$1); while kill -0 $p 2>/dev/null; do sleep 0.01; done; }\n";
    script += "case $PMIX_RANK in\n";
    script += "3) wait_for pid.2; " + rank_3 + " ;;\n";
    script += "2) wait_for pid.3; " + rank_2 + " ;;\n";
    script += "*) sleep 300 ;;\nesac\n: " + marker_;
    return launch({"-n", "4", "sh", "-c", script});
  }

  // The directory launch_kill_and_exit's ranks share is not the launcher's: keep it out of
  // the leftovers check.
  void remove_rank_exchange() { std::filesystem::remove_all(tmpdir_.path() + "/ranks"); }
};

TEST_F(LauncherFailure, ARankExitingNonZeroStopsTheOthers) {
  ProcessResult result = launch({"-n", "4", kProbeProgram, "--exit-code", "1", "--on-rank", "2",
                                 "--fence-timeout", "30", "--marker", marker_});
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  // PMIx may let the others' closing fence complete without the departed rank, so they can
  // have ended by themselves when the launcher looks.
  EXPECT_TRUE(contains(result.err, R"(riseml-launch: rank 2 \(pid \d+\) exited with status 1; )"
                                   R"((stopping the other [1-3] ranks?|no other rank is running))"))
      << result.err;
  EXPECT_LT(result.elapsed, seconds(20));
  expect_nothing_left();
}

TEST_F(LauncherFailure, ARankKilledByASignalStopsTheOthers) {
  ProcessResult result = launch({"-n", "4", kProbeProgram, "--kill-self", "9", "--on-rank", "1",
                                 "--fence-timeout", "30", "--marker", marker_});
  EXPECT_EQ(result.exit_code, 128 + 9) << result.err;
  // As above, the others may have finished their closing fence and ended by themselves.
  EXPECT_TRUE(contains(result.err, R"(riseml-launch: rank 1 \(pid \d+\) was killed by signal 9 )"
                                   R"(\(Killed\); (stopping|no other rank is running))"))
      << result.err;
  EXPECT_LT(result.elapsed, seconds(20));
  expect_nothing_left();
}

TEST_F(LauncherFailure, ASignalDeathReapedAfterAPeersErrorExitIsBlamed) {
  ProcessResult result = launch_kill_and_exit(true);
  EXPECT_EQ(result.exit_code, 128 + SIGKILL) << result.err;
  EXPECT_TRUE(contains(result.err, R"(^riseml-launch: rank 3 \(pid \d+\) was killed by signal 9 )"
                                   R"(\(Killed\); stopping the other 2 ranks\n)"
                                   R"(riseml-launch: also: rank 2 \(pid \d+\) exited with status )"
                                   R"(1, (?:[0-9.]+ s earlier|at the same time)\n)"))
      << result.err;
  EXPECT_LT(result.elapsed, seconds(20));
  remove_rank_exchange();
  expect_nothing_left();
}

TEST_F(LauncherFailure, ASignalDeathReapedBeforeAPeersErrorExitIsBlamed) {
  ProcessResult result = launch_kill_and_exit(false);
  EXPECT_EQ(result.exit_code, 128 + SIGKILL) << result.err;
  // Rank 2's exit comes after the launcher stopped the job: its answer to the stop, not news.
  EXPECT_TRUE(contains(result.err, R"(^riseml-launch: rank 3 \(pid \d+\) was killed by signal 9 )"
                                   R"(\(Killed\); stopping the other 3 ranks\n$)"))
      << result.err;
  EXPECT_LT(result.elapsed, seconds(20));
  remove_rank_exchange();
  expect_nothing_left();
}

TEST_F(LauncherFailure, ALateSignalDeathIsNamedButTheFirstFailureStaysTheCause) {
  // Rank 1 exits 1; rank 3 is killed by SIGKILL (which the launcher never sends within the
  // grace period) only once the launcher stops it, well after the blame window.
  std::string script = "case $PMIX_RANK in 1) exit 1 ;; 3) trap 'kill -9 $$' TERM ;; esac; ";
  script += "sleep 300 & wait; : " + marker_;
  ProcessResult result = launch({"-n", "4", "sh", "-c", script});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_TRUE(contains(result.err, R"(^riseml-launch: rank 1 \(pid \d+\) exited with status 1; )"
                                   R"(stopping the other 3 ranks\n)"
                                   R"(riseml-launch: also: rank 3 \(pid \d+\) was killed by )"
                                   R"(signal 9 \(Killed\) while the job was being stopped\n$)"))
      << result.err;
  EXPECT_LT(result.elapsed, seconds(20));
  expect_nothing_left();
}

TEST_F(LauncherFailure, ARankHangingOutsideTheFenceTimesTheOthersOut) {
  ProcessResult result = launch({"-n", "4", kProbeProgram, "--hang-on-rank", "3", "--fence-timeout",
                                 "2", "--marker", marker_});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_TRUE(contains(result.err, R"(PMIx_Fence did not complete within 2 s .*TIMEOUT)"))
      << result.err;
  EXPECT_TRUE(contains(result.err, R"(riseml-launch: rank [0-2] \(pid \d+\) exited with status 1)"))
      << result.err;
  EXPECT_GE(result.elapsed, seconds(2));
  EXPECT_LT(result.elapsed, seconds(20));
  expect_nothing_left();
}

TEST_F(LauncherFailure, SigtermToTheLauncherStopsEveryRank) {
  SpawnedProcess launcher({kLaunchProgram, "-n", "4", kProbeProgram, "--hang-on-rank", "0",
                           "--fence-timeout", "300", "--marker", marker_},
                          {{"TMPDIR", tmpdir_.path()}});
  bool started = launcher.wait_for_stdout(
      [](const std::string& out) { return parse_probe_output(out).facts.size() == 4; },
      seconds(30));
  ASSERT_TRUE(started) << launcher.out();
  EXPECT_EQ(processes_with_marker(marker_, milliseconds(0)).size(), 5u);  // launcher + 4 ranks
  launcher.send_signal(SIGTERM);
  ProcessResult result = launcher.wait(seconds(30));
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 128 + SIGTERM) << result.err;
  EXPECT_TRUE(contains(result.err, R"(riseml-launch: received SIGTERM; stopping 4 ranks)"))
      << result.err;
  expect_nothing_left();
}

TEST_F(LauncherFailure, RanksIgnoringSigtermAreKilledAfterTheGracePeriod) {
  // Each rank's shell ignores SIGTERM, and so does the sleep it starts (ignored signals stay
  // ignored across exec).
  std::string script = "trap '' TERM; echo ready; sleep 300; : " + marker_;
  SpawnedProcess launcher({kLaunchProgram, "-n", "3", "--stop-grace", "1", "sh", "-c", script},
                          {{"TMPDIR", tmpdir_.path()}});
  ASSERT_TRUE(launcher.wait_for_stdout(
      [](const std::string& out) { return out == "ready\nready\nready\n"; }, seconds(30)))
      << launcher.out();
  launcher.send_signal(SIGTERM);
  ProcessResult result = launcher.wait(seconds(30));
  EXPECT_EQ(result.exit_code, 128 + SIGTERM) << result.err;
  EXPECT_TRUE(contains(result.err,
                       R"(3 ranks still running 1 s after being asked to stop; sending SIGKILL)"))
      << result.err;
  EXPECT_GE(result.elapsed, seconds(1));
  EXPECT_LT(result.elapsed, seconds(15));
  expect_nothing_left();
}

TEST_F(LauncherFailure, WhatARankStartedIsStoppedWithIt) {
  // The grandchild shell carries the marker and, as a background job of a non-interactive
  // shell, ignores SIGINT: it must still not outlive the job.
  std::string script = "sh -c 'sleep 300; : " + marker_ + "' & echo ready; wait";
  SpawnedProcess launcher({kLaunchProgram, "-n", "2", "sh", "-c", script},
                          {{"TMPDIR", tmpdir_.path()}});
  ASSERT_TRUE(launcher.wait_for_stdout(
      [](const std::string& out) { return out == "ready\nready\n"; }, seconds(30)));
  // The launcher and both ranks carry the marker in their arguments too (and a shell's fork
  // shows its parent's arguments until it execs).
  EXPECT_GE(processes_with_marker(marker_, milliseconds(0)).size(), 5u);
  launcher.send_signal(SIGINT);
  ProcessResult result = launcher.wait(seconds(30));
  EXPECT_EQ(result.exit_code, 128 + SIGINT) << result.err;
  expect_nothing_left();
}

TEST_F(LauncherFailure, TimeoutStopsTheJob) {
  ProcessResult result = launch({"-n", "2", "--timeout", "1", kProbeProgram, "--hang-on-rank", "0",
                                 "--fence-timeout", "300", "--marker", marker_});
  EXPECT_EQ(result.exit_code, 124) << result.err;
  EXPECT_TRUE(contains(result.err, R"(the job ran longer than --timeout 1 s; stopping 2 ranks)"))
      << result.err;
  EXPECT_LT(result.elapsed, seconds(15));
  expect_nothing_left();
}

TEST_F(LauncherFailure, PmixAbortStopsTheJobWithItsStatus) {
  ProcessResult result = launch({"-n", "3", kAbortHelperProgram, "1", marker_});
  EXPECT_EQ(result.exit_code, 7) << result.err;
  EXPECT_TRUE(contains(result.err,
                       R"(rank 1 \(pid \d+\) called PMIx_Abort with status 7 \(helper gives up\); )"
                       R"(stopping the other 2 ranks)"))
      << result.err;
  EXPECT_LT(result.elapsed, seconds(15));
  expect_nothing_left();
}

TEST_F(LauncherFailure, TheExitStatusOfTheFailedRankIsPassedOn) {
  ProcessResult result = launch({"-n", "2", kProbeProgram, "--exit-code", "42", "--on-rank", "0",
                                 "--fence-timeout", "30", "--marker", marker_});
  EXPECT_EQ(result.exit_code, 42) << result.err;
  EXPECT_TRUE(contains(result.err, R"(rank 0 \(pid \d+\) exited with status 42)")) << result.err;
  expect_nothing_left();
}

TEST_F(LauncherFailure, AMissingProgramIsReportedOnce) {
  ProcessResult result = launch({"-n", "4", "riseml-no-such-program"});
  EXPECT_EQ(result.exit_code, 127);
  EXPECT_EQ(result.err,
            "riseml-launch: cannot find program 'riseml-no-such-program' (no executable file of "
            "that name in any PATH directory)\n");
  expect_nothing_left();
}

}  // namespace
}  // namespace riseml::testing
