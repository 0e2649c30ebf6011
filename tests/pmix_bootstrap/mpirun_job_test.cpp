// The same probe under Open MPI's mpirun, the other PMIx server a user may have.
#include <gtest/gtest.h>

#include "probe_report.hpp"
#include "spawned_process.hpp"
#include "test_programs.hpp"

namespace riseml::testing {
namespace {

using std::chrono::seconds;

bool have_mpirun() {
  return run_process({"sh", "-c", "command -v mpirun"}, {}, seconds(10)).exit_code == 0;
}

#define SKIP_WITHOUT_MPIRUN()                                                               \
  if (!have_mpirun()) {                                                                     \
    GTEST_SKIP() << "mpirun is not installed (apt-get install openmpi-bin): skipping this " \
                    "mpirun test";                                                          \
  }

TEST(MpirunJob, FourRanksAreConsistent) {
  SKIP_WITHOUT_MPIRUN();
  ScratchTmpdir tmpdir;  // mpirun's session directory goes here, not into the shared /tmp
  std::string marker = unique_marker();
  ProcessResult result =
      run_process({"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4", kProbeProgram,
                   "--fence-timeout", "30", "--marker", marker},
                  {{"TMPDIR", tmpdir.path()}}, seconds(60));
  ASSERT_FALSE(result.timed_out) << result.out << result.err;
  ASSERT_EQ(result.exit_code, 0) << result.err;
  ProbeReport report = parse_probe_output(result.out);
  std::vector<std::string> problems = check_consistent_job(report, 4, false);
  EXPECT_TRUE(problems.empty()) << problems.front() << "\n" << result.out;
  for (const ProbeFacts& facts : report.facts) EXPECT_EQ(facts.nnodes, 1);
  EXPECT_TRUE(processes_with_marker(marker, seconds(2)).empty());
}

TEST(MpirunJob, RendezvousInterfaceWorksAcrossRanks) {
  SKIP_WITHOUT_MPIRUN();
  ScratchTmpdir tmpdir;
  ProcessResult result = run_process(
      {"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "3", kRendezvousHelperProgram},
      {{"TMPDIR", tmpdir.path()}}, seconds(60));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  for (const char* line :
       {"rendezvous rank=0 ok", "rendezvous rank=1 ok", "rendezvous rank=2 ok"}) {
    EXPECT_NE(result.out.find(line), std::string::npos) << line << " in:\n" << result.out;
  }
}

}  // namespace
}  // namespace riseml::testing
