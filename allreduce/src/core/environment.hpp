// The RISEML_* environment variables the core reads, parsed in one place.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace riseml::env {

// RISEML_SHM_SLOTS (default 8): slots per shared-memory channel.
int shm_slots();
// RISEML_SHM_SLOT_KIB: bytes per slot; by default 128 KiB, less when a host has so many ranks
// that a rank's segment would pass 16 MiB.
std::uint64_t shm_slot_bytes(std::uint32_t channels, std::uint32_t slots);
// RISEML_SPIN_US: how long a rank waiting on shared memory spins before it sleeps on its
// doorbell; by default 50 us, or none when the host has more ranks than this rank may use CPUs
// (a spinning rank then keeps its peer from running: it yields at once instead).
std::chrono::microseconds spin_time(int local_ranks);
// RISEML_SMALL_BYTES (default 64 KiB): allreduce below this size uses halving-doubling, and so
// does one whose ring steps would carry less than a quarter of it.
std::size_t small_message_bytes();

}  // namespace riseml::env
