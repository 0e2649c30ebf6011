// A program started without any launcher: alone it is rank 0 of 1; as one of several tasks
// without PMIx, or with a dead PMIx server, it says how to start it.
#include <gtest/gtest.h>

#include "probe_report.hpp"
#include "spawned_process.hpp"
#include "test_programs.hpp"

namespace riseml::testing {
namespace {

using std::chrono::seconds;

TEST(SingleProcess, AloneIsRankZeroOfOne) {
  ProcessResult result = run_process({kProbeProgram}, without_launcher_variables(), seconds(30));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  ProbeReport report = parse_probe_output(result.out);
  std::vector<std::string> problems = check_consistent_job(report, 1, false);
  EXPECT_TRUE(problems.empty()) << problems.front() << "\n" << result.out;
  ASSERT_EQ(report.facts.size(), 1u);
  EXPECT_EQ(report.facts[0].rank, 0);
  EXPECT_EQ(report.facts[0].size, 1);
  EXPECT_EQ(report.facts[0].nnodes, 1);
}

TEST(SingleProcess, SrunWithoutPmixSaysHowToStart) {
  EnvironmentChanges environment = without_launcher_variables();
  environment["SLURM_STEP_NUM_TASKS"] = "4";
  ProcessResult result = run_process({kProbeProgram}, environment, seconds(30));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  for (const char* expected :
       {"SLURM_STEP_NUM_TASKS=4", "srun --mpi=pmix", "riseml-launch -n N", "mpirun"}) {
    EXPECT_NE(result.err.find(expected), std::string::npos) << expected << " in:\n" << result.err;
  }
}

TEST(SingleProcess, UnreachablePmixServerSaysHowToStart) {
  EnvironmentChanges environment = without_launcher_variables();
  environment["PMIX_NAMESPACE"] = "gone-job";
  environment["PMIX_RANK"] = "0";
  environment["PMIX_SERVER_URI41"] = "gone-job.0;tcp4://127.0.0.1:1";
  ProcessResult result = run_process({kProbeProgram}, environment, seconds(30));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("PMIx_Init failed"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("srun --mpi=pmix"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace riseml::testing
