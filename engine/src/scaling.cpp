#include "scaling.hpp"

#include <riseml/half_float.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace riseml::engine {

namespace {

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400u) == 0);
      bits = sign | (static_cast<std::uint32_t>(127 - 15 - e) << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

std::uint16_t float_to_half(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u)  // inf or nan
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x47800000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow
  if (abs < 0x38800000u) {  // subnormal or zero in half
    const float magic = std::bit_cast<float>(0x3f000000u);  // 0.5: shifts the mantissa down
    const float v = std::bit_cast<float>(abs) + magic;
    return static_cast<std::uint16_t>(sign | (std::bit_cast<std::uint32_t>(v) - 0x3f000000u));
  }
  const std::uint32_t mantissa_odd = (abs >> 13) & 1u;
  std::uint32_t rounded = abs + 0xc8000fffu + mantissa_odd;  // rebias exponent, round to even
  return static_cast<std::uint16_t>(sign | (rounded >> 13));
}

float bf16_to_float(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

std::uint16_t float_to_bf16(float f) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

template <typename T>
void scale_native(const void* in, void* out, std::size_t n, double factor) {
  const T* src = static_cast<const T*>(in);
  T* dst = static_cast<T*>(out);
  const T f = static_cast<T>(factor);
  for (std::size_t i = 0; i < n; ++i) dst[i] = src[i] * f;
}

// Integers scale in double and truncate toward zero (Horovod's rule); values beyond the type's
// range saturate instead of being undefined.
template <typename T>
void scale_integer(const void* in, void* out, std::size_t n, double factor) {
  const T* src = static_cast<const T*>(in);
  T* dst = static_cast<T*>(out);
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
  for (std::size_t i = 0; i < n; ++i) {
    const double v = std::trunc(static_cast<double>(src[i]) * factor);
    if (std::isnan(v))
      dst[i] = 0;
    else if (v <= lo)
      dst[i] = std::numeric_limits<T>::min();
    else if (v >= hi)
      dst[i] = std::numeric_limits<T>::max();
    else
      dst[i] = static_cast<T>(v);
  }
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void scale_half(const void* in, void* out, std::size_t n, double factor) {
  const auto* src = static_cast<const std::uint16_t*>(in);
  auto* dst = static_cast<std::uint16_t*>(out);
  const float f = static_cast<float>(factor);
  for (std::size_t i = 0; i < n; ++i) dst[i] = FromFloat(ToFloat(src[i]) * f);
}

}  // namespace

double device_scale_factor(DataType type, double factor) {
  const float f = static_cast<float>(factor);
  if (type == DataType::float16) return kernels::float16_to_float(kernels::float_to_float16(f));
  if (type == DataType::bfloat16) return kernels::bfloat16_to_float(kernels::float_to_bfloat16(f));
  return factor;
}

bool is_floating_point(DataType type) {
  return type == DataType::float32 || type == DataType::float64 || is_half_precision(type);
}

void scale_copy(const void* in, void* out, std::size_t count, DataType type, double factor) {
  if (factor == 1.0 || type == DataType::boolean) {
    if (in != out && count != 0) std::memmove(out, in, count * element_size(type));
    return;
  }
  switch (type) {
    case DataType::float32: scale_native<float>(in, out, count, factor); break;
    case DataType::float64: scale_native<double>(in, out, count, factor); break;
    case DataType::float16: scale_half<half_to_float, float_to_half>(in, out, count, factor); break;
    case DataType::bfloat16: scale_half<bf16_to_float, float_to_bf16>(in, out, count, factor); break;
    case DataType::int32: scale_integer<std::int32_t>(in, out, count, factor); break;
    case DataType::int64: scale_integer<std::int64_t>(in, out, count, factor); break;
    case DataType::uint8: scale_integer<std::uint8_t>(in, out, count, factor); break;
    case DataType::int8: scale_integer<std::int8_t>(in, out, count, factor); break;
    case DataType::int16: scale_integer<std::int16_t>(in, out, count, factor); break;
    default: break;
  }
}

}  // namespace riseml::engine
