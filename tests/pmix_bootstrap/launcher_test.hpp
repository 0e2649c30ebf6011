// The base of the fixtures that run riseml-launch: a TMPDIR of the test's own and a marker to
// find the processes it started, and the check that the launcher left neither behind.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "spawned_process.hpp"

namespace riseml::testing {

class LauncherTest : public ::testing::Test {
 protected:
  void expect_nothing_left() {
    EXPECT_TRUE(processes_with_marker(marker_, std::chrono::seconds(3)).empty())
        << "stray processes:\n"
        << joined(processes_with_marker(marker_, std::chrono::milliseconds(0)));
    EXPECT_TRUE(tmpdir_.leftovers().empty()) << "left in TMPDIR: " << joined(tmpdir_.leftovers());
  }

  ScratchTmpdir tmpdir_;
  std::string marker_ = unique_marker();
};

}  // namespace riseml::testing
