// The stall check stops a job only when the server really stopped answering: a request left
// unanswered past the limit - or one that cannot even be sent - is a stall once confirmed; a
// server that answers, even late, is not; stopping the watch waits for the request in flight,
// abandoning it never blocks.
#include "server_stall_watch.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace riseml::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Answers every request at once, from a thread of its own, as a healthy server does.
class AnsweringPing final : public ServerPing {
 public:
  bool send(std::function<void()> pong, std::string&) override {
    ++sent;
    std::thread(std::move(pong)).detach();
    return true;
  }
  std::atomic<int> sent{0};
};

// Keeps the requests; the test answers them, or never does.
class HeldPing final : public ServerPing {
 public:
  bool send(std::function<void()> pong, std::string&) override {
    std::lock_guard lock(mutex_);
    pongs_.push_back(std::move(pong));
    sent_at_.push_back(Clock::now());
    return true;
  }
  std::size_t count() {
    std::lock_guard lock(mutex_);
    return pongs_.size();
  }
  Clock::time_point sent_at(std::size_t request) {
    std::lock_guard lock(mutex_);
    return sent_at_.at(request);
  }
  void answer_last() {
    std::function<void()> pong;
    {
      std::lock_guard lock(mutex_);
      pong = pongs_.back();
    }
    pong();
  }
  // The answers hold the watch's state, which holds this ping: let go of them at the end.
  void forget() {
    std::lock_guard lock(mutex_);
    pongs_.clear();
  }

 private:
  std::mutex mutex_;
  std::vector<std::function<void()>> pongs_;
  std::vector<Clock::time_point> sent_at_;
};

// Blocks in send() until released, as a request can on a lock that a stuck server holds.
class BlockingPing final : public ServerPing {
 public:
  bool send(std::function<void()>, std::string&) override {
    std::unique_lock lock(mutex_);
    entered_ = true;
    changed_.wait(lock, [&] { return released_; });
    return false;
  }
  bool entered() {
    std::lock_guard lock(mutex_);
    return entered_;
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      released_ = true;
    }
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool entered_ = false;
  bool released_ = false;
};

class FailingPing final : public ServerPing {
 public:
  bool send(std::function<void()>, std::string& why) override {
    why = "no server";
    return false;
  }
};

template <typename Condition>
bool eventually(Condition condition, milliseconds timeout = milliseconds(5000)) {
  auto deadline = Clock::now() + timeout;
  while (!condition()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

// When stalled() first says so, asking every 5 ms as the supervisor's loop would; nullopt
// when it did not within `give_up_after`.
std::optional<Clock::time_point> stall_seen(ServerStallWatch& watch, milliseconds give_up_after) {
  auto deadline = Clock::now() + give_up_after;
  while (Clock::now() < deadline) {
    Clock::time_point now = Clock::now();
    if (watch.stalled(now)) return now;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return std::nullopt;
}

TEST(StallWatchSettings, PingsEverySecondOrAQuarterOfAShortLimit) {
  EXPECT_EQ(StallWatchSettings{milliseconds(10'000)}.interval(), milliseconds(1000));
  EXPECT_EQ(StallWatchSettings{milliseconds(2'000)}.interval(), milliseconds(500));
  EXPECT_EQ(StallWatchSettings{milliseconds(2)}.interval(), milliseconds(1));
}

TEST(ServerStallWatch, AnUnansweredRequestIsAStallAfterTheLimitAndTheConfirmation) {
  auto ping = std::make_shared<HeldPing>();
  {
    ServerStallWatch watch(ping, {milliseconds(400)});
    ASSERT_TRUE(eventually([&] { return ping->count() == 1; }));
    std::optional<Clock::time_point> stalled = stall_seen(watch, milliseconds(10'000));
    ASSERT_TRUE(stalled);
    // 400 ms unanswered, then confirmed at least 100 ms later.
    EXPECT_GE(*stalled - ping->sent_at(0), milliseconds(500));
    EXPECT_LT(*stalled - ping->sent_at(0), milliseconds(3000));
    EXPECT_EQ(ping->count(), 1u) << "a second request while the first is unanswered";
  }
  ping->forget();
}

TEST(ServerStallWatch, ARequestStuckInSendingIsAStallAndAbandoningItDoesNotBlock) {
  auto ping = std::make_shared<BlockingPing>();
  auto started = Clock::now();
  auto watch = std::make_unique<ServerStallWatch>(ping, StallWatchSettings{milliseconds(200)});
  std::optional<Clock::time_point> stalled = stall_seen(*watch, milliseconds(10'000));
  ASSERT_TRUE(stalled);
  EXPECT_GE(*stalled - started, milliseconds(250));  // 200 ms, then confirmed 50 ms later
  EXPECT_LT(*stalled - started, milliseconds(3000));
  EXPECT_TRUE(ping->entered());
  auto abandoning = Clock::now();
  watch.reset();  // the destructor abandons the thread blocked in send()
  EXPECT_LT(Clock::now() - abandoning, milliseconds(1000));
  ping->release();  // lets the abandoned thread end (quietly: it was told to stop)
}

TEST(ServerStallWatch, AHealthyServerIsNeverStalled) {
  auto ping = std::make_shared<AnsweringPing>();
  ServerStallWatch watch(ping, {milliseconds(400)});  // a request every 100 ms
  auto until = Clock::now() + milliseconds(2000);
  while (Clock::now() < until) {
    ASSERT_FALSE(watch.stalled(Clock::now()));
    std::this_thread::sleep_for(milliseconds(2));
  }
  EXPECT_GE(ping->sent.load(), 5);
  watch.stop();
}

TEST(ServerStallWatch, AnAnswerBeforeTheConfirmationIsNoStall) {
  // As when the launcher itself was stopped (Ctrl-Z) past the limit: its request waited, and
  // the server answers it as soon as the launcher runs again.
  auto ping = std::make_shared<HeldPing>();
  {
    ServerStallWatch watch(ping, {milliseconds(400)});  // confirmation after 100 ms
    ASSERT_TRUE(eventually([&] { return ping->count() == 1; }));
    Clock::time_point late = ping->sent_at(0) + milliseconds(5000);
    EXPECT_FALSE(watch.stalled(late));  // suspected
    EXPECT_EQ(watch.next_check(late), late + milliseconds(100));
    ping->answer_last();
    EXPECT_FALSE(watch.stalled(late + milliseconds(100)));
  }
  ping->forget();
}

TEST(ServerStallWatch, TheNextCheckIsWhenTheRequestInFlightTurnsLate) {
  auto ping = std::make_shared<HeldPing>();
  {
    ServerStallWatch watch(ping, {milliseconds(10'000)});  // a request a second
    ASSERT_TRUE(eventually([&] { return ping->count() == 1; }));
    // The watch takes the time just before sending, the ping just after.
    Clock::time_point late = watch.next_check(Clock::now());
    EXPECT_LE(late, ping->sent_at(0) + milliseconds(10'000));
    EXPECT_GT(late, ping->sent_at(0) + milliseconds(9'000));
    ping->answer_last();
    Clock::time_point now = Clock::now();
    EXPECT_EQ(watch.next_check(now), now + milliseconds(10'000));  // nothing in flight
  }
  ping->forget();
}

TEST(ServerStallWatch, StopWaitsForTheRequestInFlight) {
  auto ping = std::make_shared<HeldPing>();
  ServerStallWatch watch(ping, {milliseconds(10'000)});
  ASSERT_TRUE(eventually([&] { return ping->count() == 1; }));
  std::thread answer_later([&] {
    std::this_thread::sleep_for(milliseconds(300));
    ping->answer_last();
  });
  auto stopping = Clock::now();
  watch.stop();
  EXPECT_GE(Clock::now() - stopping, milliseconds(250));
  answer_later.join();
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(ping->count(), 1u) << "a request after stop()";
  ping->forget();
}

TEST(ServerStallWatch, AbandonDoesNotWaitForTheRequestInFlight) {
  auto ping = std::make_shared<HeldPing>();
  auto watch = std::make_unique<ServerStallWatch>(ping, StallWatchSettings{milliseconds(10'000)});
  ASSERT_TRUE(eventually([&] { return ping->count() == 1; }));
  auto abandoning = Clock::now();
  watch->abandon();
  watch.reset();
  EXPECT_LT(Clock::now() - abandoning, milliseconds(1000));
  ping->answer_last();  // a late answer reaches only the thread's own state
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(ping->count(), 1u) << "a request after abandon()";
  ping->forget();
}

TEST(ServerStallWatch, APingThatCannotBeSentTurnsTheCheckOffAndSaysSo) {
  ::testing::internal::CaptureStderr();
  {
    ServerStallWatch watch(std::make_shared<FailingPing>(), {milliseconds(20)});
    std::this_thread::sleep_for(milliseconds(200));
    EXPECT_FALSE(watch.stalled(Clock::now() + milliseconds(10'000)));
    watch.stop();
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "riseml-launch: cannot check that the PMIx server keeps answering (no server); the "
            "job runs without --pmix-stall-timeout\n");
}

}  // namespace
}  // namespace riseml::launch
