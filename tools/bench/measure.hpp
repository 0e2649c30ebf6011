// The two ways riseml-bench times an allreduce, the same for every contender:
//  - back to back, as nccl-tests does: a barrier, `iterations` calls in a row, the slowest
//    rank's time divided by the calls (out of place, or in place);
//  - per call, as a training step sees it: a barrier, one call timed on each rank, the slowest
//    rank's time, for each of `calls` calls.
#pragma once

#include <riseml/communicator.hpp>

#include <cstddef>
#include <functional>
#include <vector>

namespace riseml::bench {

// Seconds per call, slowest rank.
double time_back_to_back(Communicator& comm, const std::function<void()>& call, int iterations);

// Seconds of each call, slowest rank.
std::vector<double> time_per_call(Communicator& comm, const std::function<void()>& call, int calls);

// The slowest rank's value.
double max_over_ranks(Communicator& comm, double x);

// The q-quantile (0..1) of `v` by nearest rank; 0 for none.
double quantile(std::vector<double> v, double q);

}  // namespace riseml::bench
