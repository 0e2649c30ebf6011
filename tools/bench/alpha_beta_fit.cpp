#include "alpha_beta_fit.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace riseml::bench {

LinkParameters fit_alpha_beta(const std::vector<double>& m, const std::vector<double>& t) {
  if (m.size() != t.size()) throw std::invalid_argument("fit_alpha_beta: as many times as sizes");
  std::size_t small = 0, large = 0;
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (!(t[i] > 0)) throw std::invalid_argument("fit_alpha_beta: a time is not positive");
    small += m[i] <= kLatencyBlockMax;
    large += m[i] >= kBandwidthBlockMin;
  }
  if (small == 0 || large == 0)
    throw std::invalid_argument("fit_alpha_beta: needs a block of at most 512 B and one of at least 1 MiB");
  // Each from its own regime, each corrected by the other: two rounds settle it.
  double alpha = 0, beta = 0;
  for (int round = 0; round < 3; ++round) {
    double num = 0, den = 0, sum = 0;
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (m[i] >= kBandwidthBlockMin) {
        const double w = 1 / (t[i] * t[i]);  // relative error
        num += w * m[i] * (t[i] - alpha);
        den += w * m[i] * m[i];
      }
    }
    beta = num / den;
    for (std::size_t i = 0; i < m.size(); ++i)
      if (m[i] <= kLatencyBlockMax) sum += t[i] - m[i] * beta;
    alpha = std::max(0.0, sum / static_cast<double>(small));
  }
  if (!(beta > 0)) throw std::invalid_argument("fit_alpha_beta: time does not grow with size");
  LinkParameters p{alpha, 1 / beta, 0, {}};
  for (std::size_t i = 0; i < m.size(); ++i) {
    const double fitted = alpha + m[i] * beta;
    p.points.push_back({m[i], t[i], fitted});
    p.max_relative_error = std::max(p.max_relative_error, std::abs(fitted - t[i]) / t[i]);
  }
  return p;
}

}  // namespace riseml::bench
