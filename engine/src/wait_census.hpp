// How a process's threads use one engine's handles: how many are blocked waiting on one, and
// how many handles have finished. A rank with a thread blocked while none of the engine's
// handles finishes for a while cannot submit anything more from that thread; when every rank
// is so, and nothing pending is ready, nothing ever will be: a deadlock
// (EngineOptions::deadlock_shutdown).
#pragma once

#include <atomic>
#include <cstdint>

namespace riseml::engine {

struct WaitCensus {
  std::atomic<int> waiting{0};
  std::atomic<std::uint64_t> finished{0};
};

}  // namespace riseml::engine
