// A rank's doorbell in shared memory: a rank with nothing to do sleeps on it (a futex) instead
// of spinning, yielding or sleeping for a fixed time, and a peer that did something on a
// shared-memory channel that may let it move (published a slot for it, released one of its
// slots, gave up) rings it. A fixed sleep let two ranks fall into a convoy: each found the
// other asleep, slept its own timer out, and every few slots cost a timer tick
// (docs/allreduce.md, "Waiting"). With the doorbell a sleeper wakes as soon as its peer moves,
// and a peer pays for a wake-up only when somebody sleeps.
//
// No lost wake-up (the Dekker pattern): the sleeper announces itself (arm), looks for work once
// more, and sleeps only while the ring count is what it read when arming; a peer publishes its
// progress before it looks for sleepers. Whichever comes second sees the other.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace riseml {

struct alignas(64) Doorbell {
  std::atomic<std::uint32_t> rings{0};
  std::atomic<std::uint32_t> sleepers{0};

  // The sleeper, in order: arm(), look for work once more, then sleep() or disarm().
  std::uint32_t arm();
  void sleep(std::uint32_t armed_at, std::chrono::microseconds limit);  // and disarms
  void disarm();
  // A peer, after publishing progress the owner may wait for.
  void ring();
};

}  // namespace riseml
