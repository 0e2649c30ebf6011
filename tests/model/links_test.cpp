// The units of the site file's network: section.
#include <gtest/gtest.h>

#include <riseml/model/links.hpp>

namespace riseml::model {
namespace {

TEST(Units, Rates) {
  EXPECT_DOUBLE_EQ(*parse_rate("25gbit"), 25e9 / 8);
  EXPECT_DOUBLE_EQ(*parse_rate("25Gbit/s"), 25e9 / 8);
  EXPECT_DOUBLE_EQ(*parse_rate("100gbps"), 100e9 / 8);
  EXPECT_DOUBLE_EQ(*parse_rate("800mbit"), 1e8);
  EXPECT_DOUBLE_EQ(*parse_rate("3.1GB/s"), 3.1e9);
  EXPECT_DOUBLE_EQ(*parse_rate("10gbyte"), 10e9);
  EXPECT_DOUBLE_EQ(*parse_rate("1000"), 1000);
  EXPECT_FALSE(parse_rate("fast"));
  EXPECT_FALSE(parse_rate("0gbit"));
  EXPECT_FALSE(parse_rate("25 furlongs"));
}

TEST(Units, Durations) {
  EXPECT_DOUBLE_EQ(*parse_duration("5us"), 5e-6);
  EXPECT_DOUBLE_EQ(*parse_duration("1.5ms"), 1.5e-3);
  EXPECT_DOUBLE_EQ(*parse_duration("800ns"), 8e-7);
  EXPECT_DOUBLE_EQ(*parse_duration("0.2"), 0.2);
  EXPECT_FALSE(parse_duration("-1us"));
  EXPECT_FALSE(parse_duration("5 parsecs"));
}

TEST(Units, Bytes) {
  EXPECT_DOUBLE_EQ(*parse_bytes("64MiB"), 64.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*parse_bytes("16m"), 16.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*parse_bytes("0"), 0);
  EXPECT_FALSE(parse_bytes("lots"));
}

TEST(Links, AlphaBeta) {
  const Link l{5e-6, 1e9};
  EXPECT_DOUBLE_EQ(l.time(1e6), 5e-6 + 1e-3);
}

}  // namespace
}  // namespace riseml::model
