#include "doorbell.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace riseml {

namespace {
// Shared between processes: not FUTEX_PRIVATE_FLAG.
void futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t value, const timespec* timeout) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op, value, timeout, nullptr, 0);
}
static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
}  // namespace

std::uint32_t Doorbell::arm() {
  sleepers.fetch_add(1, std::memory_order_seq_cst);
  const std::uint32_t seen = rings.load(std::memory_order_seq_cst);
  // The look for work that follows must not be ordered before the announcement.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return seen;
}

void Doorbell::sleep(std::uint32_t armed_at, std::chrono::microseconds limit) {
  const auto us = limit.count();
  const timespec t{static_cast<time_t>(us / 1000000), static_cast<long>(us % 1000000) * 1000};
  futex(&rings, FUTEX_WAIT, armed_at, &t);  // returns at once if the count moved since arming
  disarm();
}

void Doorbell::disarm() { sleepers.fetch_sub(1, std::memory_order_seq_cst); }

void Doorbell::ring() {
  // The progress just published must be visible before the look for sleepers.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_seq_cst) == 0) return;
  rings.fetch_add(1, std::memory_order_seq_cst);
  futex(&rings, FUTEX_WAKE, INT_MAX, nullptr);
}

}  // namespace riseml
