#include "device_watchdog.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace riseml::torch_distributed {
namespace {

using namespace std::chrono_literals;
using Clock = DeviceWatchdog::Clock;

// A fake op: where its two events stand, set by the test.
struct FakeOp {  // atomics: the watchdog's thread reads them in the last tests
  std::atomic<Progress> started{Progress::pending};
  std::atomic<Progress> finished{Progress::pending};
  std::string error;
  WatchedOp watched() {
    return {[this](std::string* why) {
              const Progress p = started;
              if (p == Progress::failed) *why = error;
              return p;
            },
            [this](std::string* why) {
              const Progress p = finished;
              if (p == Progress::failed) *why = error;
              return p;
            }};
  }
};

struct Fixture {
  std::vector<std::string> failures;
  bool healthy = true;
  std::string unhealthy_why = "NCCL: remote process exited";
  DeviceWatchdog dog;
  explicit Fixture(std::chrono::milliseconds timeout)
      : dog(DeviceWatchdogOptions{timeout, 1ms,
                                  [this](std::string* why) {
                                    if (!healthy) *why = unhealthy_why;
                                    return healthy;
                                  },
                                  [this](const std::string& why) { failures.push_back(why); },
                                  /*start_thread=*/false}) {}
};

TEST(DeviceWatchdog, FinishedOpsLeaveInOrderAndNothingFails) {
  Fixture f(100ms);
  FakeOp a, b;
  f.dog.watch(a.watched());
  f.dog.watch(b.watched());
  const auto t0 = Clock::now();
  b.started = Progress::done;
  b.finished = Progress::done;  // cannot leave before a: the stream is in order
  f.dog.check(t0);
  EXPECT_EQ(f.dog.watched(), 2u);
  a.started = Progress::done;
  a.finished = Progress::done;
  f.dog.check(t0 + 1ms);
  EXPECT_EQ(f.dog.watched(), 0u);
  EXPECT_TRUE(f.failures.empty());
  EXPECT_FALSE(f.dog.failure());
  EXPECT_TRUE(f.dog.drain(0ms));
}

TEST(DeviceWatchdog, TheClockStartsWhenTheOpStartsNotWhenItWasQueued) {
  Fixture f(100ms);
  FakeOp a;
  f.dog.watch(a.watched());
  const auto t0 = Clock::now();
  f.dog.check(t0);  // the caller's own work before it still runs: no clock
  f.dog.check(t0 + 10s);
  EXPECT_FALSE(f.dog.failure()) << "a busy GPU is not a dead peer";
  a.started = Progress::done;
  f.dog.check(t0 + 10s);
  f.dog.check(t0 + 10s + 100ms);
  EXPECT_FALSE(f.dog.failure());
  f.dog.check(t0 + 10s + 101ms);
  ASSERT_TRUE(f.dog.failure());
  EXPECT_NE(f.dog.failure()->find("no progress within 100 ms"), std::string::npos)
      << *f.dog.failure();
  ASSERT_EQ(f.failures.size(), 1u);
  EXPECT_EQ(f.failures.front(), *f.dog.failure());
  EXPECT_EQ(f.dog.watched(), 0u);
  EXPECT_FALSE(f.dog.drain(0ms));
}

TEST(DeviceWatchdog, TheNextOpsClockStartsWhenTheOneBeforeItFinishes) {
  Fixture f(100ms);
  FakeOp a, b;
  f.dog.watch(a.watched());
  f.dog.watch(b.watched());
  const auto t0 = Clock::now();
  a.started = Progress::done;
  b.started = Progress::done;
  f.dog.check(t0);
  a.finished = Progress::done;
  f.dog.check(t0 + 90ms);  // b's clock starts here, not at t0
  f.dog.check(t0 + 180ms);
  EXPECT_FALSE(f.dog.failure());
  f.dog.check(t0 + 191ms);
  EXPECT_TRUE(f.dog.failure());
}

TEST(DeviceWatchdog, AnUnhealthyCommunicatorFailsAtOnceAndOnlyOnce) {
  Fixture f(1h);
  FakeOp a;
  f.dog.watch(a.watched());
  f.healthy = false;
  f.dog.check(Clock::now());
  ASSERT_TRUE(f.dog.failure());
  EXPECT_EQ(*f.dog.failure(), f.unhealthy_why);
  f.dog.check(Clock::now());
  EXPECT_EQ(f.failures.size(), 1u);
  FakeOp later;
  f.dog.watch(later.watched());  // after the abort nothing of it can hang
  EXPECT_EQ(f.dog.watched(), 0u);
}

TEST(DeviceWatchdog, HealthIsNotAskedWhileNothingIsWatched) {
  Fixture f(1h);
  f.healthy = false;
  f.dog.check(Clock::now());
  EXPECT_FALSE(f.dog.failure());
}

TEST(DeviceWatchdog, AFailedEventQueryFailsWithItsReason) {
  Fixture f(1h);
  FakeOp a;
  a.started = Progress::done;
  a.finished = Progress::failed;
  a.error = "cudaEventQuery: an illegal memory access was encountered";
  f.dog.watch(a.watched());
  f.dog.check(Clock::now());
  ASSERT_TRUE(f.dog.failure());
  EXPECT_EQ(*f.dog.failure(), a.error);
  FakeOp b;
  b.started = Progress::failed;  // a failure without words still fails, saying so
  Fixture g(1h);
  g.dog.watch(b.watched());
  g.dog.check(Clock::now());
  ASSERT_TRUE(g.dog.failure());
  EXPECT_FALSE(g.dog.failure()->empty());
}

TEST(DeviceWatchdog, ItsCallbacksMayCallItBack) {
  // Health, failure and event queries run without the watchdog's lock: the GPU path's take
  // its own lock, which its worker holds while it calls watch().
  DeviceWatchdog* self = nullptr;
  std::size_t seen_in_health = 99, seen_in_failure = 99, seen_in_query = 99;
  DeviceWatchdog dog(DeviceWatchdogOptions{1h, 1ms,
                                           [&](std::string* why) {
                                             seen_in_health = self->watched();
                                             *why = "unhealthy";
                                             return false;
                                           },
                                           [&](const std::string&) {
                                             seen_in_failure = self->watched();
                                           },
                                           false});
  self = &dog;
  FakeOp a;
  WatchedOp op = a.watched();
  op.started = [&](std::string*) {
    seen_in_query = self->watched();
    return Progress::done;
  };
  dog.watch(op);
  dog.check(Clock::now());
  EXPECT_EQ(seen_in_query, 1u);
  EXPECT_EQ(seen_in_health, 1u);
  EXPECT_EQ(seen_in_failure, 0u);
  ASSERT_TRUE(dog.failure());
}

TEST(DeviceWatchdog, ItsThreadTimesOutAStuckOpAndDrainGivesUp) {
  std::atomic<int> calls{0};
  std::string reason;
  FakeOp stuck;
  stuck.started = Progress::done;
  {
    DeviceWatchdog dog(DeviceWatchdogOptions{50ms, 2ms, nullptr,
                                             [&](const std::string& why) {
                                               reason = why;
                                               ++calls;
                                             },
                                             true});
    dog.watch(stuck.watched());
    const auto t0 = Clock::now();
    EXPECT_FALSE(dog.drain(10s));  // ends with the failure, long before 10 s
    EXPECT_LT(Clock::now() - t0, 5s);
    EXPECT_TRUE(dog.failure());
  }
  EXPECT_EQ(calls.load(), 1);
  EXPECT_NE(reason.find("50 ms"), std::string::npos) << reason;
}

TEST(DeviceWatchdog, DrainReturnsWhenTheThreadSeesEveryOpFinish) {
  FakeOp a;
  DeviceWatchdog dog(DeviceWatchdogOptions{1h, 2ms, nullptr, nullptr, true});
  dog.watch(a.watched());
  EXPECT_FALSE(dog.drain(20ms));  // not finished yet, no failure: gives up at the limit
  a.started = Progress::done;
  a.finished = Progress::done;
  EXPECT_TRUE(dog.drain(10s));
  EXPECT_FALSE(dog.failure());
}

}  // namespace
}  // namespace riseml::torch_distributed
