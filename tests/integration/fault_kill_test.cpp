// kill -9 of a random rank at a random moment during a long allreduce, many times: every
// survivor must return an error naming the dead rank (and its host) within the timeout, and
// nothing may hang. The ranks are forked here (not started by a launcher, which would stop the
// survivors itself) and meet through a rendezvous in a temporary directory.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <riseml/communicator.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "file_rendezvous.hpp"

namespace riseml {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr auto kTimeout = 5s;

[[noreturn]] void run_rank(const fs::path& dir, int rank, int n, TransportChoice transport) {
  int status = 3;
  try {
    test::FileRendezvous rendezvous(dir, rank, n);
    CommunicatorOptions o;
    o.transport = transport;
    o.timeout = kTimeout;
    Communicator comm(rendezvous, o);
    std::ofstream(dir / ("ready." + std::to_string(rank))) << "ready\n";
    std::vector<float> buffer(4 << 20, 1.0f);  // 16 MiB: long enough to be killed inside
    try {
      for (;;) comm.allreduce(buffer.data(), buffer.data(), buffer.size(), DataType::float32,
                              ReduceOp::max);
    } catch (const CollectiveError& e) {
      std::ofstream(dir / ("error." + std::to_string(rank))) << e.what();
      status = 0;
    }
  } catch (const std::exception& e) {
    std::ofstream(dir / ("setup." + std::to_string(rank))) << e.what();
  }
  _exit(status);
}

struct Trial {
  int ranks;
  TransportChoice transport;
};

void run_trial(const Trial& t, std::mt19937& rng, int trial) {
  char templ[] = "/tmp/riseml-fault-XXXXXX";
  ASSERT_NE(::mkdtemp(templ), nullptr);
  const fs::path dir = templ;
  std::vector<pid_t> pids;
  for (int r = 0; r < t.ranks; ++r) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) run_rank(dir, r, t.ranks, t.transport);
    pids.push_back(pid);
  }
  auto kill_all = [&] {
    for (pid_t p : pids)
      if (p > 0) ::kill(p, SIGKILL);
    for (pid_t& p : pids)
      if (p > 0) ::waitpid(p, nullptr, 0), p = -1;
  };
  // Wait until every rank is set up, then kill one at a random moment of the loop.
  const auto ready_deadline = Clock::now() + 20s;
  for (int r = 0; r < t.ranks; ++r)
    while (!fs::exists(dir / ("ready." + std::to_string(r)))) {
      if (Clock::now() > ready_deadline) {
        kill_all();
        FAIL() << "trial " << trial << ": rank " << r << " was not set up in time";
      }
      std::this_thread::sleep_for(2ms);
    }
  std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<>(0, 300)(rng)));
  const int victim = std::uniform_int_distribution<>(0, t.ranks - 1)(rng);
  ::kill(pids[static_cast<std::size_t>(victim)], SIGKILL);
  ::waitpid(pids[static_cast<std::size_t>(victim)], nullptr, 0);
  pids[static_cast<std::size_t>(victim)] = -1;
  const auto killed = Clock::now();

  // Every survivor must exit, with an error, within the timeout (plus scheduling slack).
  for (int r = 0; r < t.ranks; ++r) {
    pid_t& p = pids[static_cast<std::size_t>(r)];
    if (p < 0) continue;
    int status = 0;
    while (::waitpid(p, &status, WNOHANG) == 0) {
      if (Clock::now() - killed > kTimeout + 3s) {
        kill_all();
        FAIL() << "trial " << trial << ": rank " << r << " hung after rank " << victim << " was killed";
      }
      std::this_thread::sleep_for(2ms);
    }
    p = -1;
    const auto took = Clock::now() - killed;
    EXPECT_LT(took, kTimeout + 1s) << "trial " << trial << " rank " << r;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "trial " << trial << " rank " << r << " status " << status;
    std::ifstream in(dir / ("error." + std::to_string(r)));
    std::stringstream error;
    error << in.rdbuf();
    EXPECT_NE(error.str().find("rank " + std::to_string(victim) + " (host "), std::string::npos)
        << "trial " << trial << ", " << t.ranks << " ranks, killed rank " << victim
        << "; rank " << r << " said: " << error.str();
  }
  fs::remove_all(dir);
}

TEST(FaultKill, SharedMemoryTwentyRandomKills) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 20; ++trial)
    run_trial({std::uniform_int_distribution<>(2, 4)(rng), TransportChoice::shm}, rng, trial);
}

TEST(FaultKill, TcpRandomKills) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 8; ++trial)
    run_trial({std::uniform_int_distribution<>(2, 4)(rng), TransportChoice::tcp}, rng, trial);
}

}  // namespace
}  // namespace riseml
