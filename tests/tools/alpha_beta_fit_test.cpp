// riseml-bench --fit's line: exact on exact data, latency and bandwidth each from its regime,
// robust to a cache bump in the middle sizes, and refusing what cannot be fitted.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "alpha_beta_fit.hpp"

namespace riseml::bench {
namespace {

const std::vector<double> kSizes = {8, 64, 512, 4096, 32768, 262144, 1 << 20, 4 << 20, 16 << 20};

std::vector<double> line(double alpha, double bandwidth) {
  std::vector<double> t;
  for (double m : kSizes) t.push_back(alpha + m / bandwidth);
  return t;
}

TEST(AlphaBetaFit, RecoversAnExactLine) {
  // 20 us and 117 MB/s: a shaped 1 Gbit/s link.
  const LinkParameters p = fit_alpha_beta(kSizes, line(20e-6, 117e6));
  EXPECT_NEAR(p.latency_s, 20e-6, 1e-9);
  EXPECT_NEAR(p.bandwidth_Bps, 117e6, 1);
  EXPECT_LT(p.max_relative_error, 1e-9);
  ASSERT_EQ(p.points.size(), kSizes.size());
  EXPECT_DOUBLE_EQ(p.points[3].block_bytes, 4096);
}

TEST(AlphaBetaFit, MiddleSizesDoNotPullTheEnds) {
  // Shared memory: 32-256 KiB blocks run from cache at twice the rate of the large ones.
  std::vector<double> t = line(1.5e-6, 2.9e9);
  t[4] = 1.5e-6 + 32768 / 5.8e9;
  t[5] = 1.5e-6 + 262144 / 5.8e9;
  const LinkParameters p = fit_alpha_beta(kSizes, t);
  EXPECT_NEAR(p.latency_s, 1.5e-6, 1e-8);
  EXPECT_NEAR(p.bandwidth_Bps, 2.9e9, 2.9e9 * 1e-6);
  // ... and the report says how far the line is from them.
  EXPECT_GT(p.max_relative_error, 0.4);
}

TEST(AlphaBetaFit, LatencyNeverNegative) {
  // Large blocks faster than small ones would extrapolate: no negative latency comes out.
  std::vector<double> t = line(0, 1e9);
  t[0] = t[1] = t[2] = 1e-12;
  const LinkParameters p = fit_alpha_beta(kSizes, t);
  EXPECT_GE(p.latency_s, 0);
  EXPECT_NEAR(p.bandwidth_Bps, 1e9, 1e9 * 1e-3);
}

TEST(AlphaBetaFit, RefusesWhatCannotBeFitted) {
  EXPECT_THROW(fit_alpha_beta({8, 64}, {1e-6, 1e-6}), std::invalid_argument);               // no large block
  EXPECT_THROW(fit_alpha_beta({1 << 20, 4 << 20}, {1e-3, 4e-3}), std::invalid_argument);   // no small block
  EXPECT_THROW(fit_alpha_beta({8, 1 << 20}, {1e-6}), std::invalid_argument);                // sizes != times
  EXPECT_THROW(fit_alpha_beta({8, 1 << 20}, {1e-6, 0}), std::invalid_argument);             // not positive
  EXPECT_THROW(fit_alpha_beta({8, 1 << 20}, {1e-3, 1e-4}), std::invalid_argument);          // shrinks with size
}

}  // namespace
}  // namespace riseml::bench
