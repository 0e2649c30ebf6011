#include "automatic_settings.hpp"

#include <algorithm>

namespace riseml {

std::uint64_t automatic_shm_slot_bytes(std::uint32_t channels, std::uint32_t slots) {
  const std::uint64_t budget = 16ull << 20;
  std::uint64_t bytes = budget / std::max<std::uint64_t>(1, std::uint64_t(channels) * slots);
  bytes = std::clamp<std::uint64_t>(bytes, 16 << 10, 128 << 10);
  return bytes & ~std::uint64_t{4095};
}

}  // namespace riseml
