// A backward pass as the engine sees it, shared by riseml-replay (a model's gradients) and
// riseml-bench --fit (the spread's bursts): each gradient is handed to the engine once the
// compute before it has run (slept until, from a running time point, so that late hand-overs
// do not push the later ones back), as an in-place average.
#pragma once

#include <riseml/datatype.hpp>
#include <riseml/engine/engine.hpp>

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace riseml::bench {

struct HandedGradient {
  std::string name;
  void* buffer = nullptr;  // in place
  std::vector<std::int64_t> shape;
  double compute_before_s = 0;  // the backward pass's work before this gradient is ready
};

// Hands `gradients` over in order, each once `at` (advanced by its compute) is reached; `at`
// ends after the last one's compute. engine == nullptr: the compute alone (no handles). Sets
// the calling thread's timer slack to 1 ns, so its later sleeps end on time too.
std::vector<engine::Handle> hand_over(engine::Engine* engine, std::span<const HandedGradient> gradients,
                                      DataType type, std::chrono::steady_clock::time_point& at);

}  // namespace riseml::bench
