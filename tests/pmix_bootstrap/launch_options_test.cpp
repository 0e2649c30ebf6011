#include "launch_options.hpp"

#include <gtest/gtest.h>

namespace riseml::launch {
namespace {

LaunchOptions parse_ok(const std::vector<std::string>& args) {
  auto parsed = parse_launch_options(args);
  if (const int* code = std::get_if<int>(&parsed)) {
    ADD_FAILURE() << "parse failed with exit code " << *code;
    return {};
  }
  return std::get<LaunchOptions>(parsed);
}

int parse_error(const std::vector<std::string>& args) {
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  auto parsed = parse_launch_options(args);
  testing::internal::GetCapturedStdout();
  testing::internal::GetCapturedStderr();
  const int* code = std::get_if<int>(&parsed);
  return code != nullptr ? *code : -1;
}

TEST(LaunchOptions, ProgramArgumentsAreLeftAlone) {
  LaunchOptions options = parse_ok({"-n", "4", "python3", "-u", "train.py", "--np", "9"});
  EXPECT_EQ(options.ranks, 4);
  EXPECT_FALSE(options.tag_output);
  EXPECT_FALSE(options.elastic);
  EXPECT_FALSE(options.timeout);
  EXPECT_EQ(options.finalize_timeout.count(), 5000);
  ASSERT_TRUE(options.pmix_stall_timeout);
  EXPECT_EQ(options.pmix_stall_timeout->count(), 10'000);
  EXPECT_EQ(options.command, (std::vector<std::string>{"python3", "-u", "train.py", "--np", "9"}));
}

TEST(LaunchOptions, AllOptionsAndTheSeparator) {
  LaunchOptions options = parse_ok({"--np", "2", "--tag-output", "--elastic", "--timeout", "1.5",
                                    "--stop-grace", "0", "--finalize-timeout", "0.25", "--", "-weird"});
  EXPECT_EQ(options.ranks, 2);
  EXPECT_TRUE(options.tag_output);
  EXPECT_TRUE(options.elastic);
  ASSERT_TRUE(options.timeout);
  EXPECT_EQ(options.timeout->count(), 1500);
  EXPECT_EQ(options.stop_grace.count(), 0);
  EXPECT_EQ(options.finalize_timeout.count(), 250);
  EXPECT_EQ(options.command, (std::vector<std::string>{"-weird"}));
}

TEST(LaunchOptions, PmixStallTimeout) {
  LaunchOptions options = parse_ok({"-n", "2", "--pmix-stall-timeout", "2.5", "true"});
  ASSERT_TRUE(options.pmix_stall_timeout);
  EXPECT_EQ(options.pmix_stall_timeout->count(), 2500);
  EXPECT_FALSE(parse_ok({"-n", "2", "--pmix-stall-timeout", "0", "true"}).pmix_stall_timeout);
}

TEST(LaunchOptions, UsageErrorsExitWithTwo) {
  EXPECT_EQ(parse_error({"true"}), 2);                        // no -n
  EXPECT_EQ(parse_error({"-n", "2"}), 2);                     // no program
  EXPECT_EQ(parse_error({"-n", "0", "true"}), 2);             // no ranks
  EXPECT_EQ(parse_error({"-n", "2", "--bogus", "true"}), 2);  // unknown option
  EXPECT_EQ(parse_error({"-n", "2", "--timeout", "-1", "true"}), 2);
  EXPECT_EQ(parse_error({"-n", "2", "--finalize-timeout", "0", "true"}), 2);
  EXPECT_EQ(parse_error({"-n", "2", "--pmix-stall-timeout", "-1", "true"}), 2);
}

TEST(LaunchOptions, HelpExitsWithZero) {
  EXPECT_EQ(parse_error({"--help"}), 0);
}

}  // namespace
}  // namespace riseml::launch
