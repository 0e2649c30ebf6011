// A stuck PMIx server does not stall a job: riseml-launch notices within --pmix-stall-timeout,
// says so, stops the ranks and exits with 125, leaving no process and no file behind; with the
// check off, the ranks themselves give up in PMIx_Init within RISEML_PMIX_INIT_TIMEOUT_S. A
// busy but healthy server is never taken for a stuck one.
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "probe_report.hpp"
#include "refused_intruder.hpp"
#include "launcher_test.hpp"
#include "spawned_process.hpp"
#include "test_programs.hpp"

namespace riseml::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// The one line riseml-launch says when it stops a job for a stuck server.
std::regex stall_line(const std::string& limit, int ranks) {
  return std::regex(
      R"(riseml-launch: the PMIx server on host \S+ stopped responding \(its progress thread )"
      R"(left a request unanswered for )" +
      limit +
      R"(: libpmix 4\.2\.2 deadlocks once it refused a connection from another user's )"
      R"(process, see docs/launching\.md\), so ranks would hang in PMIx_Init or in a fence; )"
      R"(stopping )" +
      std::to_string(ranks) + R"( ranks \(exit status 125\); run the job again\n)");
}

class LauncherStall : public LauncherTest {
 protected:

  // Starts `ranks` ranks that wait for the go file and then run `program`; has another user's
  // process claim to be rank 0 first (the real trigger), then lets the ranks go. Returns the
  // launcher's result and, in `released`, when the ranks were let go.
  ProcessResult launch_after_refusal(const std::vector<std::string>& launcher_options, int ranks,
                                     const std::string& program, const EnvironmentChanges& extra,
                                     Clock::time_point& released) {
    ScratchTmpdir exchange;
    const std::string env_file = exchange.path() + "/env";
    const std::string go_file = exchange.path() + "/go";
    std::vector<std::string> argv{kLaunchProgram, "-n", std::to_string(ranks)};
    argv.insert(argv.end(), launcher_options.begin(), launcher_options.end());
    argv.insert(argv.end(), {"sh", "-c",
                             write_environment_then_wait(env_file, go_file) + "; exec " + program +
                                 " --fence-timeout 60 --marker " + marker_});
    EnvironmentChanges environment = extra;
    environment["TMPDIR"] = tmpdir_.path();
    SpawnedProcess launcher(argv, environment);
    released = Clock::now();
    if (!wait_for_file(env_file, seconds(30))) {
      ADD_FAILURE() << "rank 0 did not start";
      return launcher.wait(seconds(30));
    }
    ProcessResult intruder = run_intruder(env_file);
    EXPECT_EQ(intruder.out, "refused\n") << intruder.err;
    std::ofstream(go_file).close();
    released = Clock::now();
    return launcher.wait(seconds(60));
  }
};

// Without root: the launcher with test hooks, whose stall check gets no answer, as from a
// libpmix 4.2.2 server after the refusal.
TEST_F(LauncherStall, AServerThatStopsAnsweringEndsTheJobWith125) {
  ProcessResult result = run_process(
      {kLaunchWithTestHooksProgram, "-n", "3", "--pmix-stall-timeout", "1", "sh", "-c",
       "sleep 300; : " + marker_},
      {{"TMPDIR", tmpdir_.path()}, {"RISEML_LAUNCH_TEST_PMIX_NEVER_ANSWERS", "1"}}, seconds(45));
  ASSERT_FALSE(result.timed_out) << result.err;
  EXPECT_EQ(result.exit_code, 125) << result.err;
  EXPECT_TRUE(std::regex_match(result.err, stall_line("1 s", 3))) << result.err;
  // 1 s unanswered, confirmed 0.25 s later; SIGTERM ends the ranks at once.
  EXPECT_GE(result.elapsed, milliseconds(1250));
  EXPECT_LT(result.elapsed, seconds(10));
  expect_nothing_left();
}

TEST_F(LauncherStall, RanksConnectingAfterARefusedIntruderDoNotStallTheJob) {
  if (geteuid() != 0) GTEST_SKIP() << "running a process as another user (nobody) needs root";
  Clock::time_point released;
  ProcessResult result =
      launch_after_refusal({"--pmix-stall-timeout", "2"}, 2, kProbeProgram, {}, released);
  auto took = Clock::now() - released;
  ASSERT_FALSE(result.timed_out) << result.err;
  EXPECT_EQ(result.exit_code, 125) << result.err;
  EXPECT_TRUE(std::regex_match(result.err, stall_line("2 s", 2))) << result.err;
  // The server gets stuck at the refusal or, at the latest, when rank 0 connects; rank 1 may
  // get through PMIx_Init before that (and then wait in the fence). The job ends 2 s and the
  // 0.5 s confirmation after the server's last answer.
  EXPECT_EQ(result.out.find("exchange ok"), std::string::npos) << result.out;
  EXPECT_LT(took, seconds(2) + seconds(10));
  expect_nothing_left();
}

TEST_F(LauncherStall, WithoutTheCheckRanksGiveUpInPmixInitWithinItsTimeout) {
  // As under srun, whose PMIx server has no such check: the ranks' bound on PMIx_Init ends
  // the job.
  if (geteuid() != 0) GTEST_SKIP() << "running a process as another user (nobody) needs root";
  Clock::time_point released;
  ProcessResult result = launch_after_refusal({"--pmix-stall-timeout", "0"}, 2, kProbeProgram,
                                              {{"RISEML_PMIX_INIT_TIMEOUT_S", "3"}}, released);
  auto took = Clock::now() - released;
  ASSERT_FALSE(result.timed_out) << result.err;
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_TRUE(std::regex_search(
      result.err, std::regex(R"(probe: riseml: rank [01] on host \S+: PMIx_Init did not return )"
                             R"(within 3 s: the PMIx server that started this process .*; run )"
                             R"(the job again \(RISEML_PMIX_INIT_TIMEOUT_S sets the limit\)\n)")))
      << result.err;
  EXPECT_TRUE(std::regex_search(
      result.err, std::regex(R"(riseml-launch: rank [01] \(pid \d+\) exited with status 1)")))
      << result.err;
  EXPECT_GE(took, seconds(3));
  EXPECT_LT(took, seconds(3) + seconds(10));
  expect_nothing_left();
}

TEST_F(LauncherStall, ABusyHealthyServerIsNeverTakenForStuck) {
  // 8 ranks on this machine's few cores, as fast as they can: rounds of fences and gets for
  // 6 s, checked with a limit 5 times tighter than the default.
  ProcessResult result = run_process({kLaunchProgram, "-n", "8", "--pmix-stall-timeout", "2",
                                      kFenceStormHelperProgram, "6", marker_},
                                     {{"TMPDIR", tmpdir_.path()}}, seconds(75));
  ASSERT_FALSE(result.timed_out) << result.err;
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  std::smatch match;
  std::string out = result.out;
  int ok = 0;
  while (std::regex_search(out, match, std::regex(R"(storm rank=\d+ rounds=(\d+) ok\n)"))) {
    EXPECT_GE(std::stoi(match[1]), 3) << result.out;  // they did keep the server busy
    ++ok;
    out = match.suffix();
  }
  EXPECT_EQ(ok, 8) << result.out;
  expect_nothing_left();
}

}  // namespace
}  // namespace riseml::testing
