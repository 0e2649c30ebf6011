// A program started without any launcher: alone it is rank 0 of 1; as one of several tasks
// without PMIx, or with a dead PMIx server, it says how to start it; with a PMIx server that
// never answers, it gives up within its PMIx_Init timeout and says what happened.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <regex>

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
  EXPECT_EQ(result.exit_code, 1) << result.err;
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
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("PMIx_Init failed"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("srun --mpi=pmix"), std::string::npos) << result.err;
}

// A TCP socket on 127.0.0.1 that listens and never answers: the kernel completes connections
// into its backlog, so a client connects, sends its handshake and waits, as it does with a
// stuck PMIx server.
class SilentServer {
 public:
  SilentServer() : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
    }
    port_ = ntohs(address.sin_port);
  }
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;
  ~SilentServer() {
    if (fd_ >= 0) close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

TEST(SingleProcess, APmixServerThatNeverAnswersFailsInitWithinItsTimeout) {
  SilentServer server;
  EnvironmentChanges environment = without_launcher_variables();
  environment["PMIX_NAMESPACE"] = "silent-job";
  environment["PMIX_RANK"] = "2";
  environment["PMIX_SERVER_URI41"] =
      "pmix-server.1;tcp4://127.0.0.1:" + std::to_string(server.port());
  environment["RISEML_PMIX_INIT_TIMEOUT_S"] = "2";
  ProcessResult result = run_process({kProbeProgram}, environment, seconds(30));
  ASSERT_FALSE(result.timed_out) << "PMIx_Init was not bounded";
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_TRUE(std::regex_match(
      result.err,
      std::regex(R"(probe: riseml: rank 2 on host \S+: PMIx_Init did not return within 2 s: the )"
                 R"(PMIx server that started this process \(srun's, riseml-launch's or )"
                 R"(mpirun's, job silent-job\) does not answer\. )"
                 R"(A libpmix 4\.2\.2 server gets stuck like this once it refused a connection )"
                 R"(from another user's process \(see docs/launching\.md\); run the job again )"
                 R"(\(RISEML_PMIX_INIT_TIMEOUT_S sets the limit\)\n)")))
      << result.err;
  // Bounded: neither PMIx_Init's thread, left blocked, nor anything else holds the exit up.
  EXPECT_GE(result.elapsed, seconds(2));
  EXPECT_LT(result.elapsed, seconds(10));
}

}  // namespace
}  // namespace riseml::testing
