// Scalar float16 / bfloat16 <-> float32 conversions, rounding to nearest even. The vector
// kernels must give the same bits; these are the reference and the tail/fallback path.
//
// The one copy for both compilers: gcc (C++20, the CPU kernels and tests) and nvcc (C++17,
// allreduce/cuda/src/kernels.cu), where RISEML_HOST_DEVICE makes them __host__ __device__.
// Everything is done on bits, so host and device give the same results bit for bit.
#pragma once

#include <cstdint>
#include <cstring>
#if __cplusplus >= 202002L
#include <bit>
#endif

#if defined(__CUDACC__)
#define RISEML_HOST_DEVICE __host__ __device__
#else
#define RISEML_HOST_DEVICE
#endif

namespace riseml::kernels {
namespace half_float_detail {

// The bits of a float and back. std::bit_cast is C++20 and not usable in device code, so the
// device uses the CUDA intrinsics and a C++17 host (nvcc's host pass) std::memcpy; each
// compiles to a register move, so loops over the conversions still vectorise.
RISEML_HOST_DEVICE inline std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#elif defined(__cpp_lib_bit_cast)
  return std::bit_cast<std::uint32_t>(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

RISEML_HOST_DEVICE inline float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#elif defined(__cpp_lib_bit_cast)
  return std::bit_cast<float>(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

}  // namespace half_float_detail

RISEML_HOST_DEVICE inline float bfloat16_to_float(std::uint16_t h) {
  return half_float_detail::bits_float(static_cast<std::uint32_t>(h) << 16);
}

// Branch-free so the compiler vectorises loops over it.
RISEML_HOST_DEVICE inline std::uint16_t float_to_bfloat16(float f) {
  const std::uint32_t u = half_float_detail::float_bits(f);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t quiet_nan = (u >> 16) | 0x40u;
  return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

RISEML_HOST_DEVICE inline float float16_to_float(std::uint16_t h) {
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
#if defined(__CUDA_ARCH__)
    // The leading one of a 10-bit mantissa: 22 - clz of 32 bits, so shift = clz - 21.
    const std::uint32_t shift = static_cast<std::uint32_t>(__clz(mantissa)) - 21u;
    mantissa <<= shift;
    const std::uint32_t e = 113u - shift;
#else
    std::uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
#endif
    bits = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return half_float_detail::bits_float(bits);
}

RISEML_HOST_DEVICE inline std::uint16_t float_to_float16(float f) {
  const std::uint32_t u = half_float_detail::float_bits(f);
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
