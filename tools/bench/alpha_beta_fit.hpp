// Fitting a link's alpha-beta line (a message of m bytes takes alpha + m beta) to timed sizes,
// for riseml-bench --fit (link_fit.hpp).
#pragma once

#include <vector>

namespace riseml::bench {

// Latency from the blocks a step sends in next to no time, bandwidth from the blocks the
// model's fused buffers send (a 64 MiB buffer's ring step on 4-64 ranks: 1-16 MiB). One line
// through all sizes fits neither: caches make shared memory 2x faster at 32-256 KiB than at
// 16 MiB.
inline constexpr double kLatencyBlockMax = 512, kBandwidthBlockMin = 1 << 20;

// One measured size and what the fitted line gives for it (seconds per algorithm step).
struct FitPoint {
  double block_bytes = 0;
  double measured_s = 0;
  double fitted_s = 0;
};

// alpha + m beta fitted to points (block m, seconds per step).
struct LinkParameters {
  double latency_s = 0;
  double bandwidth_Bps = 0;
  double max_relative_error = 0;  // over the points
  std::vector<FitPoint> points;
};

// t = alpha + m beta: alpha the mean of t - m beta over blocks <= 512 B, beta least squares
// on relative error over blocks >= 1 MiB (each corrected by the other); alpha >= 0. The error
// is reported over every point. std::invalid_argument without a block in each regime.
LinkParameters fit_alpha_beta(const std::vector<double>& block_bytes, const std::vector<double>& step_seconds);

}  // namespace riseml::bench
