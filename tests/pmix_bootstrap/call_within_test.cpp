// call_within returns what a call returns in time, rethrows what it throws, and gives up on a
// call that does not return by the limit without waiting for it.
#include "call_within.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace riseml::pmix {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A call that blocks until released, as PMIx_Init does with a server that never answers.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  bool passed = false;
};

TEST(CallWithin, ReturnsTheResultOfACallInTime) {
  std::optional<int> result = call_within(milliseconds(5000), [] { return 42; });
  ASSERT_TRUE(result);
  EXPECT_EQ(*result, 42);
}

TEST(CallWithin, RethrowsWhatTheCallThrew) {
  EXPECT_THROW(call_within(milliseconds(5000), []() -> int { throw std::runtime_error("no"); }),
               std::runtime_error);
}

TEST(CallWithin, GivesUpOnACallThatDoesNotReturnByTheLimit) {
  // Shared, because the call outlives this test's wait for it.
  auto gate = std::make_shared<Gate>();
  auto started = Clock::now();
  std::optional<int> result = call_within(milliseconds(200), [gate] {
    std::unique_lock lock(gate->mutex);
    gate->changed.wait(lock, [&] { return gate->open; });
    gate->passed = true;
    gate->changed.notify_all();
    return 1;
  });
  auto waited = Clock::now() - started;
  EXPECT_FALSE(result);
  EXPECT_GE(waited, milliseconds(200));
  EXPECT_LT(waited, milliseconds(3000));

  // The abandoned call still runs to its end when it can, touching only what it owns.
  std::unique_lock lock(gate->mutex);
  gate->open = true;
  gate->changed.notify_all();
  EXPECT_TRUE(gate->changed.wait_for(lock, milliseconds(5000), [&] { return gate->passed; }));
}

}  // namespace
}  // namespace riseml::pmix
