#include "hand_over.hpp"

#include <sys/prctl.h>

#include <thread>

namespace riseml::bench {

std::vector<engine::Handle> hand_over(engine::Engine* engine, std::span<const HandedGradient> gradients,
                                      DataType type, std::chrono::steady_clock::time_point& at) {
  using Clock = std::chrono::steady_clock;
  // Linux lets a sleep end up to the thread's timer slack late, 50 us by default: the slept
  // compute would run 70-90 us long at every hand-over (and at the step's end), where a GPU's
  // ends on time. With 1 ns the sleeps end 20-50 us late (docs/scaling.md).
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
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
