// The units of the site file's network: section.
#include <gtest/gtest.h>

#include <riseml/model/engine_schedule.hpp>
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
  EXPECT_DOUBLE_EQ(*parse_rate("2kbyte"), 2000);
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

// The fit's spread and the estimate's range: every part of the engine's work f times as long,
// the compute untouched; an unset copy rate stays free.
TEST(Links, EngineScaledSlowsTheEngineAndNotTheCompute) {
  Cluster c;
  c.nodes = 4;
  c.inter = {50e-6, 2.5e9 / 8};
  c.reduce_s_per_byte = 0.1e-9;
  c.cycle_overhead_s = 200e-6;
  const Cluster slow = with_engine_scaled(c, 2);
  EXPECT_DOUBLE_EQ(slow.inter.latency_s, 100e-6);
  EXPECT_DOUBLE_EQ(slow.inter.bandwidth_Bps, 2.5e9 / 16);
  EXPECT_DOUBLE_EQ(slow.reduce_s_per_byte, 0.2e-9);
  EXPECT_DOUBLE_EQ(slow.cycle_overhead_s, 400e-6);
  EXPECT_EQ(slow.copy_Bps, 0);
  EXPECT_EQ(slow.nodes, 4);

  StepProfile burst;  // all ready at once: the same cycles, each twice as long
  for (int i = 0; i < 8; ++i) burst.tensors.push_back({"g" + std::to_string(i), 1e6, 0});
  const double once = simulate_step(burst, c, EngineSettings{}).step_s;
  EXPECT_NEAR(simulate_step(burst, slow, EngineSettings{}).step_s, 2 * once, 1e-9);

  StepProfile compute_bound;  // 1 s of compute before a small last gradient
  compute_bound.tensors.push_back({"last", 1000, 1.0});
  const double alone = simulate_step(compute_bound, c, EngineSettings{}).step_s;
  const double comm = alone - 1.0;
  EXPECT_NEAR(simulate_step(compute_bound, slow, EngineSettings{}).step_s, 1.0 + 2 * comm, 1e-9);
}

}  // namespace
}  // namespace riseml::model
