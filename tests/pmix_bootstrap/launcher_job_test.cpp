// riseml-launch starts consistent PMIx jobs and leaves nothing behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "probe_report.hpp"
#include "spawned_process.hpp"
#include "test_programs.hpp"

namespace riseml::testing {
namespace {

using std::chrono::seconds;

void expect_consistent_launch(int ranks, bool tag_output) {
  ScratchTmpdir tmpdir;
  std::string marker = unique_marker();
  std::vector<std::string> argv{kLaunchProgram, "-n", std::to_string(ranks)};
  if (tag_output) argv.push_back("--tag-output");
  argv.insert(argv.end(), {kProbeProgram, "--fence-timeout", "30", "--marker", marker});
  ProcessResult result = run_process(argv, {{"TMPDIR", tmpdir.path()}}, seconds(45));

  ASSERT_FALSE(result.timed_out) << result.out << result.err;
  EXPECT_EQ(result.exit_code, 0) << result.err;
  ProbeReport report = parse_probe_output(result.out);
  EXPECT_EQ(joined(check_consistent_job(report, ranks, tag_output)), "") << result.out;
  EXPECT_TRUE(report.unparsed.empty()) << result.out;
  for (const ProbeFacts& facts : report.facts) {
    EXPECT_EQ(facts.nnodes, 1);
    EXPECT_EQ(facts.node_rank, facts.local_rank);
    EXPECT_TRUE(facts.nspace.starts_with("riseml-launch.")) << facts.nspace;
  }
  EXPECT_EQ(result.err, "");
  EXPECT_TRUE(tmpdir.leftovers().empty()) << "left in TMPDIR: " << joined(tmpdir.leftovers());
  EXPECT_TRUE(processes_with_marker(marker, seconds(2)).empty());
}

TEST(LauncherJob, FourRanksAreConsistent) {
  expect_consistent_launch(4, false);
}

TEST(LauncherJob, TaggedOutputNamesTheRankOfEveryLine) {
  expect_consistent_launch(4, true);
}

TEST(LauncherJob, OneRank) {
  expect_consistent_launch(1, false);
}

TEST(LauncherJob, MoreRanksThanCores) {
  expect_consistent_launch(8, true);
}

TEST(LauncherJob, ForwardsLinesWholeAndUnmixed) {
  // Two ranks each write 300 long lines in small pieces; every forwarded line must be whole.
  std::string script =
      "i=0; while [ $i -lt 300 ]; do printf 'rank-line-%s-' $i; printf '%0200d' 0; "
      "printf '\\n'; i=$((i+1)); done";
  ProcessResult result =
      run_process({kLaunchProgram, "-n", "2", "--tag-output", "sh", "-c", script}, {}, seconds(45));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::istringstream lines(result.out);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    ASSERT_TRUE(line.starts_with("[0] rank-line-") || line.starts_with("[1] rank-line-")) << line;
    ASSERT_EQ(line.size() - line.rfind('-') - 1, 200u) << line;
  }
  EXPECT_EQ(count, 600);
}

TEST(LauncherJob, RendezvousInterfaceWorksAcrossRanks) {
  ProcessResult result =
      run_process({kLaunchProgram, "-n", "3", kRendezvousHelperProgram}, {}, seconds(45));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  for (const char* line :
       {"rendezvous rank=0 ok", "rendezvous rank=1 ok", "rendezvous rank=2 ok"}) {
    EXPECT_NE(result.out.find(line), std::string::npos) << line << " in:\n" << result.out;
  }
}

TEST(LauncherJob, ForkedChildrenOfRanksJoinOneAfterAnother) {
  // pytest --forked: each rank's children join in turn, half of them leave without finalizing,
  // and each must read its own turn's values from its peers; then the ranks' own processes.
  ProcessResult result = run_process(
      {kLaunchProgram, "-n", "4", kForkedChildrenHelperProgram, "8"}, {}, seconds(60));
  ASSERT_FALSE(result.timed_out) << result.out << result.err;
  EXPECT_EQ(result.exit_code, 0) << result.err;
  for (int rank = 0; rank < 4; ++rank) {
    for (int child = 0; child < 8; ++child) {
      std::string line = "forked rank=" + std::to_string(rank) + " child=" +
                         std::to_string(child) + " ok";
      EXPECT_NE(result.out.find(line), std::string::npos) << line << " in:\n" << result.out;
    }
    std::string line = "forked rank=" + std::to_string(rank) + " parent ok";
    EXPECT_NE(result.out.find(line), std::string::npos) << line << " in:\n" << result.out;
  }
}

TEST(LauncherJob, EveryRankGetsHorovodsRankVariables) {
  // Horovod scripts read these before init(). Values inherited from an outer job (riseml-launch
  // inside an srun task) are replaced, as horovodrun replaces them for its workers.
  std::string script =
      "echo \"horovod rank=$HOROVOD_RANK size=$HOROVOD_SIZE local_rank=$HOROVOD_LOCAL_RANK "
      "local_size=$HOROVOD_LOCAL_SIZE cross_rank=$HOROVOD_CROSS_RANK "
      "cross_size=$HOROVOD_CROSS_SIZE pmix_rank=$PMIX_RANK\"";
  ProcessResult result = run_process(
      {kLaunchProgram, "-n", "3", "sh", "-c", script},
      {{"HOROVOD_RANK", "9"}, {"HOROVOD_SIZE", "16"}, {"HOROVOD_CROSS_SIZE", "4"}}, seconds(45));
  ASSERT_FALSE(result.timed_out) << result.out << result.err;
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::vector<std::string> lines;
  std::istringstream stream(result.out);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  std::vector<std::string> want;
  for (int rank = 0; rank < 3; ++rank) {
    want.push_back("horovod rank=" + std::to_string(rank) +
                   " size=3 local_rank=" + std::to_string(rank) +
                   " local_size=3 cross_rank=0 cross_size=1 pmix_rank=" + std::to_string(rank));
  }
  EXPECT_EQ(joined(lines), joined(want));
  EXPECT_EQ(result.err, "");
}

TEST(LauncherJob, ChildrenDoNotInheritAnOuterPmixJob) {
  // riseml-launch inside another PMIx job (e.g. an srun step) must start its own job.
  ProcessResult result =
      run_process({kLaunchProgram, "-n", "2", kProbeProgram},
                  {{"PMIX_NAMESPACE", "outer-job"}, {"PMIX_RANK", "5"}}, seconds(45));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(joined(check_consistent_job(parse_probe_output(result.out), 2, false)), "");
}

}  // namespace
}  // namespace riseml::testing
