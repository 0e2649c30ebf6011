#include "hand_over.hpp"

#include <thread>

namespace riseml::bench {

std::vector<engine::Handle> hand_over(engine::Engine* engine, std::span<const HandedGradient> gradients,
                                      DataType type, std::chrono::steady_clock::time_point& at) {
  using Clock = std::chrono::steady_clock;
  std::vector<engine::Handle> handles;
  handles.reserve(gradients.size());
  for (const HandedGradient& g : gradients) {
    if (g.compute_before_s > 0) {
      at += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(g.compute_before_s));
      std::this_thread::sleep_until(at);
    }
    if (engine) handles.push_back(engine->allreduce(g.name, g.buffer, g.buffer, g.shape, type, ReduceOp::average));
  }
  return handles;
}

}  // namespace riseml::bench
