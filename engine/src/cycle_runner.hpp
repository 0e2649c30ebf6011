// Who runs the engine's cycles: the engine thread, or a thread blocked on a handle. Handing a
// collective to the engine thread and its result back costs two wake-ups, and waking a thread
// on another CPU costs 45 us on a VM (a halted virtual CPU is woken through the host), three
// times a whole small collective. So a thread that waits for a handle while the engine thread
// is not in a cycle runs the cycles itself, as MPI's calling thread drives its own progress;
// the engine thread stays for what nobody waits on (overlap with the backward pass).
// Whoever runs a cycle holds `mutex`; the engine thread looks at the links only while it can
// take it (Communicator::wait_for_peers).
#pragma once

#include <functional>
#include <mutex>

namespace riseml::engine {

class EngineLoop;
struct HandleState;

struct CycleRunner {
  std::mutex mutex;
  EngineLoop* loop = nullptr;  // null once the engine is gone (guarded by `mutex`)
  // A waiter that finds the engine thread holding `mutex` (in a cycle, or looking at the
  // links) cannot run the cycle itself: `wake` makes the engine thread start the next one at
  // once instead of waiting out the cycle time, which a blocked caller gains nothing from.
  // Set while the engine lives (guarded by `wake_mutex`, so it is never called on a dead one).
  std::mutex wake_mutex;
  std::function<void()> wake;
};

// Called by Handle::wait before it blocks: runs cycles until `handle` is done when the runner
// is free (and the engine lives and allows it); else hurries the engine thread and returns.
void help_run_cycles(CycleRunner& runner, HandleState& handle);

}  // namespace riseml::engine
