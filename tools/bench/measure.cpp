#include "measure.hpp"

#include <algorithm>
#include <chrono>

namespace riseml::bench {

using Clock = std::chrono::steady_clock;

double max_over_ranks(Communicator& comm, double x) {
  comm.allreduce(&x, &x, 1, DataType::float64, ReduceOp::max);
  return x;
}

double time_back_to_back(Communicator& comm, const std::function<void()>& call, int iterations) {
  comm.barrier();
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) call();
  const double t = std::chrono::duration<double>(Clock::now() - start).count() / iterations;
  return max_over_ranks(comm, t);
}

std::vector<double> time_per_call(Communicator& comm, const std::function<void()>& call, int calls) {
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(calls));
  for (int i = 0; i < calls; ++i) {
    comm.barrier();
    const auto start = Clock::now();
    call();
    times.push_back(max_over_ranks(comm, std::chrono::duration<double>(Clock::now() - start).count()));
  }
  return times;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace riseml::bench
