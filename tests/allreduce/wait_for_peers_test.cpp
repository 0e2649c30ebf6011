// Communicator::wait_for_peers, the engine's idle wait: it returns soon after a peer starts a
// collective, or after interrupt_wait() once the caller has work, and otherwise sleeps its
// timeout out; over every transport.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <chrono>
#include <thread>
#include <vector>

#include "rank_threads.hpp"

namespace riseml {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

CommunicatorOptions options(TransportChoice t) {
  CommunicatorOptions o;
  o.transport = t;
  o.timeout = 20s;
  return o;
}

class WaitForPeers : public ::testing::TestWithParam<TransportChoice> {};

TEST_P(WaitForPeers, APeersCollectiveEndsTheWait) {
  std::atomic<double> waited{-1};
  auto outcomes = test::run_ranks(2, [&](int) { return options(GetParam()); }, [&](Communicator& comm) {
    float x = 1;
    comm.allreduce(&x, &x, 1, DataType::float32, ReduceOp::sum);  // both set up and in step
    if (comm.rank() == 0) {
      const auto start = Clock::now();
      comm.wait_for_peers(10s, [] { return false; });
      waited = std::chrono::duration<double>(Clock::now() - start).count();
    } else {
      std::this_thread::sleep_for(200ms);
    }
    comm.allreduce(&x, &x, 1, DataType::float32, ReduceOp::sum);
    if (x != 4) throw std::runtime_error("wrong result");
  });
  for (auto& o : outcomes) EXPECT_TRUE(o.ok) << o.error;
  EXPECT_GE(waited.load(), 0.15);
  EXPECT_LT(waited.load(), 1.5);  // woken by rank 1's message, not by the 10 s timeout
}

TEST_P(WaitForPeers, AnInterruptEndsTheWaitAndTheTimeoutHolds) {
  std::atomic<bool> work{false}, done{false};
  std::atomic<double> interrupted{-1}, timed_out{-1};
  auto outcomes = test::run_ranks(2, [&](int) { return options(GetParam()); }, [&](Communicator& comm) {
    float x = 1;
    comm.allreduce(&x, &x, 1, DataType::float32, ReduceOp::sum);
    if (comm.rank() == 0) {
      std::thread giver([&] {
        std::this_thread::sleep_for(200ms);
        work = true;
        comm.interrupt_wait();
      });
      auto start = Clock::now();
      comm.wait_for_peers(10s, [&] { return work.load(); });
      interrupted = std::chrono::duration<double>(Clock::now() - start).count();
      giver.join();
      start = Clock::now();
      comm.wait_for_peers(300ms, [] { return false; });
      timed_out = std::chrono::duration<double>(Clock::now() - start).count();
      done = true;
    } else {
      while (!done) std::this_thread::sleep_for(1ms);  // silent until rank 0 has waited
    }
    comm.barrier();
  });
  for (auto& o : outcomes) EXPECT_TRUE(o.ok) << o.error;
  EXPECT_GE(interrupted.load(), 0.15);
  EXPECT_LT(interrupted.load(), 1.5);
  EXPECT_GE(timed_out.load(), 0.29);
  EXPECT_LT(timed_out.load(), 1.5);
}

// The engine waits for its next cycle with a timeout shorter than a millisecond: the wait ends
// when it is due, not rounded up to poll()'s milliseconds (which made every such wait of the
// socket transports last 1 ms or more), nor late by the thread's default timer slack.
TEST_P(WaitForPeers, AShortTimeoutEndsWhenItIsDue) {
  std::atomic<bool> done{false};
  std::vector<double> waits_us;
  auto outcomes = test::run_ranks(2, [&](int) { return options(GetParam()); }, [&](Communicator& comm) {
    float x = 1;
    comm.allreduce(&x, &x, 1, DataType::float32, ReduceOp::sum);
    if (comm.rank() == 0) {
      for (int i = 0; i < 21; ++i) {
        const auto start = Clock::now();
        comm.wait_for_peers(200us, [] { return false; });
        waits_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
      }
      done = true;
    } else {
      while (!done) std::this_thread::sleep_for(1ms);  // silent until rank 0 has waited
    }
    comm.barrier();
  });
  for (auto& o : outcomes) EXPECT_TRUE(o.ok) << o.error;
  ASSERT_EQ(waits_us.size(), 21u);
  std::sort(waits_us.begin(), waits_us.end());
  RecordProperty("median_us", std::to_string(waits_us[10]));
  RecordProperty("longest_us", std::to_string(waits_us.back()));
  EXPECT_GE(waits_us.front(), 199.0);
  EXPECT_LT(waits_us[10], 850.0) << "the median wait of 200 us; the longest " << waits_us.back();
}

INSTANTIATE_TEST_SUITE_P(Transports, WaitForPeers,
                         ::testing::Values(TransportChoice::shm, TransportChoice::tcp, TransportChoice::inproc),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace riseml
