// What an option left unset comes to where that depends on the host: decided once, at setup
// (the spin time: placement.hpp).
#pragma once

#include <cstdint>

namespace riseml {

// shm_slot_kib unset: 128 KiB per slot, less when a rank's segment (channels x slots slots)
// would pass 16 MiB, never under 16 KiB; a multiple of 4 KiB.
std::uint64_t automatic_shm_slot_bytes(std::uint32_t channels, std::uint32_t slots);

}  // namespace riseml
