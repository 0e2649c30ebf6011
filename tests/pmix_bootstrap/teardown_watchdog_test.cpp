// The teardown watchdog ends a process whose teardown hangs - with the given status, a message
// naming the call, and the private tmpdir removed - and leaves one that finishes in time alone.
#include "teardown_watchdog.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace riseml::launch {
namespace {

using std::chrono::milliseconds;

class TeardownWatchdogTest : public ::testing::Test {
 protected:
  // The death test's child is forked (gtest's "fast" style: this process has no threads yet),
  // so it removes the very directory the test then looks for.
  void SetUp() override {
    char pattern[] = "/tmp/riseml-watchdog-test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    tmpdir_ = pattern;
    std::filesystem::create_directory(tmpdir_ + "/pmix-files");  // as PMIx leaves them
  }
  void TearDown() override { std::filesystem::remove_all(tmpdir_); }

  std::string tmpdir_;
};

TEST_F(TeardownWatchdogTest, AHangingCallEndsTheProcessWithTheStatusAndRemovesTheTmpdir) {
  EXPECT_EXIT(
      {
        TeardownWatchdog watchdog(milliseconds(200), 3, tmpdir_);
        watchdog.entering("PMIx_server_finalize", "why it hangs");
        while (true) pause();
      },
      ::testing::ExitedWithCode(3),
      "^riseml-launch: PMIx_server_finalize did not return within 0.2 s \\(why it hangs\\); "
      "exiting with the ranks' status 3 \\(--finalize-timeout sets the limit\\)\n$");
  EXPECT_FALSE(std::filesystem::exists(tmpdir_));
}

TEST_F(TeardownWatchdogTest, ATeardownInTimeIsLeftAlone) {
  auto started = std::chrono::steady_clock::now();
  {
    TeardownWatchdog watchdog(milliseconds(10'000), 3, tmpdir_);
    watchdog.entering("PMIx_server_finalize", "why it hangs");
    std::this_thread::sleep_for(milliseconds(50));
  }
  // Ending the watch does not wait for the limit, and nothing was removed.
  EXPECT_LT(std::chrono::steady_clock::now() - started, milliseconds(5'000));
  EXPECT_TRUE(std::filesystem::exists(tmpdir_ + "/pmix-files"));
}

}  // namespace
}  // namespace riseml::launch
