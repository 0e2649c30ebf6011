// Scalar float16 / bfloat16 <-> float32 conversions, rounding to nearest even. The vector
// kernels must give the same bits; these are the reference and the tail/fallback path.
#pragma once

#include <bit>
#include <cstdint>

namespace riseml::kernels {

inline float bfloat16_to_float(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

// Branch-free so the compiler vectorises loops over it.
inline std::uint16_t float_to_bfloat16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t quiet_nan = (u >> 16) | 0x40u;
  return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

inline float float16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t bits;
  if (exponent == 0x1f) {
    // inf, or nan made quiet (as the F16C instruction does)
    bits = sign | 0x7f800000u | (mantissa << 13) | (mantissa ? 0x400000u : 0u);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // signed zero
  } else {
    // Subnormal: normalise.
    std::uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

inline std::uint16_t float_to_float16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero): shift the 24-bit significand into place, round to even.
    if (abs < 0x33000000u) return static_cast<std::uint16_t>(sign);  // below half the smallest
    const std::uint32_t exponent = abs >> 23;
    const std::uint32_t significand = (abs & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - exponent;  // 14..24
    std::uint32_t half = significand >> shift;
    const std::uint32_t rest = significand & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  // Normal: rebias the exponent and round the 13 dropped bits to nearest even.
  std::uint32_t bits = abs - 0x38000000u;  // exponent - 112
  bits += 0xfffu + ((bits >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (bits >> 13));
}

}  // namespace riseml::kernels
