// The loops are written once as always-inline templates and instantiated twice: inside a
// function compiled for AVX2+F16C and inside a generic one, so the compiler's auto-vectoriser
// emits both and a runtime check picks one. float16 uses explicit F16C conversions (the
// vectoriser cannot emit them from the scalar bit-twiddling reference).
#include <riseml/reduce_kernels.hpp>

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include <riseml/half_float.hpp>

#define RISEML_INLINE inline __attribute__((always_inline))

namespace riseml::kernels {
namespace {

template <class T>
RISEML_INLINE T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

template <class T>
RISEML_INLINE T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // unsigned int at least, so uint8 does not promote to a signed int that could overflow.
    using U = std::common_type_t<std::make_unsigned_t<T>, unsigned int>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

template <ReduceOp Op, class T>
RISEML_INLINE T apply(T a, T b) {
  if constexpr (Op == ReduceOp::sum || Op == ReduceOp::average) return wrap_add(a, b);
  if constexpr (Op == ReduceOp::product) return wrap_mul(a, b);
  if constexpr (Op == ReduceOp::min) return b < a ? b : a;
  if constexpr (Op == ReduceOp::max) return a < b ? b : a;
}

template <ReduceOp Op, class T>
RISEML_INLINE void reduce_loop(T* out, const T* a, const T* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = apply<Op>(a[i], b[i]);
}

template <ReduceOp Op>
RISEML_INLINE void reduce_bfloat16_loop(std::uint16_t* out, const std::uint16_t* a,
                                        const std::uint16_t* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    out[i] = float_to_bfloat16(apply<Op>(bfloat16_to_float(a[i]), bfloat16_to_float(b[i])));
}

template <ReduceOp Op>
RISEML_INLINE void reduce_float16_scalar(std::uint16_t* out, const std::uint16_t* a,
                                         const std::uint16_t* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    out[i] = float_to_float16(apply<Op>(float16_to_float(a[i]), float16_to_float(b[i])));
}

// bool: sum and max are "any", product and min "all". Any nonzero byte counts as true and the
// result is always 0 or 1, so the order of the steps cannot change the bits.
template <ReduceOp Op>
RISEML_INLINE void reduce_bool_loop(std::uint8_t* out, const std::uint8_t* a,
                                    const std::uint8_t* b, std::size_t n) {
  constexpr bool any = Op == ReduceOp::sum || Op == ReduceOp::average || Op == ReduceOp::max;
  for (std::size_t i = 0; i < n; ++i) {
    const bool x = a[i] != 0, y = b[i] != 0;
    out[i] = static_cast<std::uint8_t>(any ? (x | y) : (x & y));
  }
}

template <ReduceOp Op>
RISEML_INLINE void reduce_typed(DataType type, void* out, const void* a, const void* b,
                                std::size_t n) {
  switch (type) {
    case DataType::float32:
      return reduce_loop<Op>(static_cast<float*>(out), static_cast<const float*>(a),
                             static_cast<const float*>(b), n);
    case DataType::float64:
      return reduce_loop<Op>(static_cast<double*>(out), static_cast<const double*>(a),
                             static_cast<const double*>(b), n);
    case DataType::int32:
      return reduce_loop<Op>(static_cast<std::int32_t*>(out), static_cast<const std::int32_t*>(a),
                             static_cast<const std::int32_t*>(b), n);
    case DataType::int64:
      return reduce_loop<Op>(static_cast<std::int64_t*>(out), static_cast<const std::int64_t*>(a),
                             static_cast<const std::int64_t*>(b), n);
    case DataType::uint8:
      return reduce_loop<Op>(static_cast<std::uint8_t*>(out), static_cast<const std::uint8_t*>(a),
                             static_cast<const std::uint8_t*>(b), n);
    case DataType::int8:
      return reduce_loop<Op>(static_cast<std::int8_t*>(out), static_cast<const std::int8_t*>(a),
                             static_cast<const std::int8_t*>(b), n);
    case DataType::int16:
      return reduce_loop<Op>(static_cast<std::int16_t*>(out), static_cast<const std::int16_t*>(a),
                             static_cast<const std::int16_t*>(b), n);
    case DataType::boolean:
      return reduce_bool_loop<Op>(static_cast<std::uint8_t*>(out),
                                  static_cast<const std::uint8_t*>(a),
                                  static_cast<const std::uint8_t*>(b), n);
    case DataType::bfloat16:
      return reduce_bfloat16_loop<Op>(static_cast<std::uint16_t*>(out),
                                      static_cast<const std::uint16_t*>(a),
                                      static_cast<const std::uint16_t*>(b), n);
    case DataType::float16:
      return reduce_float16_scalar<Op>(static_cast<std::uint16_t*>(out),
                                       static_cast<const std::uint16_t*>(a),
                                       static_cast<const std::uint16_t*>(b), n);
  }
}

RISEML_INLINE void reduce_dispatch(DataType type, ReduceOp op, void* out, const void* a,
                                   const void* b, std::size_t n) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::average: return reduce_typed<ReduceOp::sum>(type, out, a, b, n);
    case ReduceOp::min: return reduce_typed<ReduceOp::min>(type, out, a, b, n);
    case ReduceOp::max: return reduce_typed<ReduceOp::max>(type, out, a, b, n);
    case ReduceOp::product: return reduce_typed<ReduceOp::product>(type, out, a, b, n);
  }
}

void reduce_generic(DataType type, ReduceOp op, void* out, const void* a, const void* b,
                    std::size_t n) {
  reduce_dispatch(type, op, out, a, b, n);
}

// --- AVX2 + F16C ---

template <ReduceOp Op>
__attribute__((target("avx2,f16c,fma"))) RISEML_INLINE __m256 apply_ps(__m256 a, __m256 b) {
  if constexpr (Op == ReduceOp::sum || Op == ReduceOp::average) return _mm256_add_ps(a, b);
  if constexpr (Op == ReduceOp::product) return _mm256_mul_ps(a, b);
  // minps(x, y) returns y unless x < y: the same as the scalar `b < a ? b : a`.
  if constexpr (Op == ReduceOp::min) return _mm256_min_ps(b, a);
  if constexpr (Op == ReduceOp::max) return _mm256_max_ps(b, a);
}

template <ReduceOp Op>
__attribute__((target("avx2,f16c,fma"))) void reduce_float16_avx2(std::uint16_t* out,
                                                                   const std::uint16_t* a,
                                                                   const std::uint16_t* b,
                                                                   std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(apply_ps<Op>(x, y), _MM_FROUND_TO_NEAREST_INT));
  }
  reduce_float16_scalar<Op>(out + i, a + i, b + i, n - i);
}

__attribute__((target("avx2,f16c,fma"))) void reduce_avx2(DataType type, ReduceOp op, void* out,
                                                          const void* a, const void* b,
                                                          std::size_t n) {
  if (type == DataType::float16) {
    auto* o = static_cast<std::uint16_t*>(out);
    auto* x = static_cast<const std::uint16_t*>(a);
    auto* y = static_cast<const std::uint16_t*>(b);
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::average: return reduce_float16_avx2<ReduceOp::sum>(o, x, y, n);
      case ReduceOp::min: return reduce_float16_avx2<ReduceOp::min>(o, x, y, n);
      case ReduceOp::max: return reduce_float16_avx2<ReduceOp::max>(o, x, y, n);
      case ReduceOp::product: return reduce_float16_avx2<ReduceOp::product>(o, x, y, n);
    }
  }
  reduce_dispatch(type, op, out, a, b, n);
}

RISEML_INLINE void widen_loop(DataType t, const std::uint16_t* in, float* out, std::size_t n) {
  if (t == DataType::bfloat16) {
    for (std::size_t i = 0; i < n; ++i) out[i] = bfloat16_to_float(in[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = float16_to_float(in[i]);
  }
}

RISEML_INLINE void narrow_loop(DataType t, const float* in, std::uint16_t* out, std::size_t n) {
  if (t == DataType::bfloat16) {
    for (std::size_t i = 0; i < n; ++i) out[i] = float_to_bfloat16(in[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = float_to_float16(in[i]);
  }
}

void widen_generic(DataType t, const std::uint16_t* in, float* out, std::size_t n) {
  widen_loop(t, in, out, n);
}
void narrow_generic(DataType t, const float* in, std::uint16_t* out, std::size_t n) {
  narrow_loop(t, in, out, n);
}

__attribute__((target("avx2,f16c,fma"))) void widen_avx2(DataType t, const std::uint16_t* in,
                                                         float* out, std::size_t n) {
  std::size_t i = 0;
  if (t == DataType::float16) {
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                    reinterpret_cast<const __m128i*>(in + i))));
  }
  widen_loop(t, in + i, out + i, n - i);
}

__attribute__((target("avx2,f16c,fma"))) void narrow_avx2(DataType t, const float* in,
                                                          std::uint16_t* out, std::size_t n) {
  std::size_t i = 0;
  if (t == DataType::float16) {
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  }
  narrow_loop(t, in + i, out + i, n - i);
}

// A division by a power of two 2^k is the multiplication by 2^-k, bit for bit: both round the
// same real number once (2^-k is exact), and a multiplication costs a fraction of a division.
bool is_power_of_two(int divisor) { return divisor > 0 && (divisor & (divisor - 1)) == 0; }

// One pass: widen 8, divide, round back to nearest even (as the scalar tail).
__attribute__((target("avx2,f16c,fma"))) void divide_float16_avx2(std::uint16_t* p, std::size_t n, float d,
                                                                  bool power_of_two) {
  std::size_t i = 0;
  const __m256 divisor = _mm256_set1_ps(d), inverse = _mm256_set1_ps(1.0f / d);
  if (power_of_two) {
    for (; i + 8 <= n; i += 8) {
      const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p + i),
                       _mm256_cvtps_ph(_mm256_mul_ps(x, inverse), _MM_FROUND_TO_NEAREST_INT));
    }
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + i),
                     _mm256_cvtps_ph(_mm256_div_ps(x, divisor), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) p[i] = float_to_float16(float16_to_float(p[i]) / d);
}

__attribute__((target("avx2"))) void streaming_copy_avx2(std::byte* dst, const std::byte* src,
                                                        std::size_t n) {
  // Align the destination to 32 bytes, stream the middle, copy the tail.
  const std::size_t head = std::min<std::size_t>(n, (32 - reinterpret_cast<std::uintptr_t>(dst) % 32) % 32);
  std::memcpy(dst, src, head);
  std::size_t i = head;
  for (; i + 128 <= n; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 64));
    const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 96), d);
  }
  _mm_sfence();
  std::memcpy(dst + i, src + i, n - i);
}

Isa detect_isa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
      __builtin_cpu_supports("fma"))
    return Isa::avx2_f16c;
  return Isa::generic;
}

template <class T>
void divide_loop(T* p, std::size_t n, int divisor) {
  if constexpr (std::is_integral_v<T>) {
    // In 64 bits: a uint8 divisor would wrap to 0 at 256 ranks. Truncated toward zero, as
    // Horovod does (its tests compare with torch.div(..., rounding_mode='trunc')).
    const long long d = divisor;
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<long long>(p[i]) / d);
  } else {
    const T d = static_cast<T>(divisor);
    if (is_power_of_two(divisor)) {
      const T inverse = T(1) / d;
      for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<T>(p[i] * inverse);
      return;
    }
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<T>(p[i] / d);
  }
}

// Set once a communicator is created with KernelChoice::generic; never cleared.
std::atomic<bool> generic_only{false};

}  // namespace

Isa best_isa() {
  static const Isa isa = detect_isa();
  return isa;
}

Isa active_isa() {
  return generic_only.load(std::memory_order_relaxed) ? Isa::generic : best_isa();
}

void use_generic_kernels() noexcept { generic_only.store(true, std::memory_order_relaxed); }

const char* to_string(Isa isa) { return isa == Isa::avx2_f16c ? "avx2+f16c" : "generic"; }

void reduce(Isa isa, DataType type, ReduceOp op, void* out, const void* a, const void* b,
            std::size_t count) {
  if (count == 0) return;
  if (isa == Isa::avx2_f16c)
    reduce_avx2(type, op, out, a, b, count);
  else
    reduce_generic(type, op, out, a, b, count);
}

void reduce(DataType type, ReduceOp op, void* out, const void* a, const void* b,
            std::size_t count) {
  reduce(active_isa(), type, op, out, a, b, count);
}

void widen_to_float(Isa isa, DataType t, const void* in, float* out, std::size_t count) {
  if (!is_half_precision(t)) throw std::invalid_argument("widen_to_float: not a 16-bit float");
  auto* p = static_cast<const std::uint16_t*>(in);
  if (isa == Isa::avx2_f16c)
    widen_avx2(t, p, out, count);
  else
    widen_generic(t, p, out, count);
}

void narrow_from_float(Isa isa, DataType t, const float* in, void* out, std::size_t count) {
  if (!is_half_precision(t)) throw std::invalid_argument("narrow_from_float: not a 16-bit float");
  auto* p = static_cast<std::uint16_t*>(out);
  if (isa == Isa::avx2_f16c)
    narrow_avx2(t, in, p, count);
  else
    narrow_generic(t, in, p, count);
}

void widen_to_float(DataType t, const void* in, float* out, std::size_t count) {
  widen_to_float(active_isa(), t, in, out, count);
}

void narrow_from_float(DataType t, const float* in, void* out, std::size_t count) {
  narrow_from_float(active_isa(), t, in, out, count);
}

void streaming_copy(void* dst, const void* src, std::size_t bytes) {
  if (active_isa() == Isa::avx2_f16c)
    streaming_copy_avx2(static_cast<std::byte*>(dst), static_cast<const std::byte*>(src), bytes);
  else
    std::memcpy(dst, src, bytes);
}

void divide(DataType type, void* buffer, std::size_t count, int divisor) {
  switch (type) {
    case DataType::float32: return divide_loop(static_cast<float*>(buffer), count, divisor);
    case DataType::float64: return divide_loop(static_cast<double*>(buffer), count, divisor);
    case DataType::int32: return divide_loop(static_cast<std::int32_t*>(buffer), count, divisor);
    case DataType::int64: return divide_loop(static_cast<std::int64_t*>(buffer), count, divisor);
    case DataType::uint8: return divide_loop(static_cast<std::uint8_t*>(buffer), count, divisor);
    case DataType::int8: return divide_loop(static_cast<std::int8_t*>(buffer), count, divisor);
    case DataType::int16: return divide_loop(static_cast<std::int16_t*>(buffer), count, divisor);
    case DataType::boolean: throw std::invalid_argument("divide: bool has no average");
    case DataType::float16:
    case DataType::bfloat16: {
      // Vectorised: one element at a time in software, the average of a fused float16 buffer
      // cost 4 ns an element, a fifth of the allreduce on a 1 Gbit/s link. Same bits: exact
      // widening, one float32 division, one rounding to nearest even.
      auto* p = static_cast<std::uint16_t*>(buffer);
      const float d = static_cast<float>(divisor);
      const bool power_of_two = is_power_of_two(divisor);
      if (type == DataType::float16 && active_isa() == Isa::avx2_f16c)
        return divide_float16_avx2(p, count, d, power_of_two);
      const float inverse = 1.0f / d;
      constexpr std::size_t kBlock = 2048;
      float wide[kBlock] = {};
      for (std::size_t at = 0; at < count; at += kBlock) {
        const std::size_t n = std::min(kBlock, count - at);
        widen_to_float(type, p + at, wide, n);
        // The whole block, whatever n: a fixed trip count is what gcc -O2 vectorises (the
        // division is most of the cost); the elements past n are zeros or stale and unused.
        if (power_of_two)
          for (std::size_t i = 0; i < kBlock; ++i) wide[i] *= inverse;
        else
          for (std::size_t i = 0; i < kBlock; ++i) wide[i] /= d;
        narrow_from_float(type, wide, p + at, n);
      }
      return;
    }
  }
}

}  // namespace riseml::kernels
