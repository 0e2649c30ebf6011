// HMAC-SHA256 through OpenSSL, for proving knowledge of the job secret. Nothing hand-rolled.
#pragma once

#include <array>
#include <cstddef>
#include <span>

namespace riseml {

using Mac = std::array<unsigned char, 32>;

Mac hmac_sha256(std::span<const std::byte> key, std::span<const unsigned char> message);
// Constant-time comparison.
bool mac_equal(const Mac& a, const unsigned char* b);
// Cryptographically random bytes (OpenSSL RAND_bytes).
void random_bytes(unsigned char* out, std::size_t n);

}  // namespace riseml
