// Cryptographically strong random bytes from the kernel (getrandom), for the job secret.
#pragma once

#include <cstddef>
#include <span>

namespace riseml::pmix {

// Fills `out` completely or throws std::system_error.
void fill_random(std::span<std::byte> out);

}  // namespace riseml::pmix
