// The reduction kernels against a scalar reference, for every type, op and instruction set,
// on lengths that hit every vector tail and misaligned pointers; and the 16-bit conversions.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "algorithms/streaming_rule.hpp"
#include <riseml/half_float.hpp>
#include <riseml/reduce_kernels.hpp>

namespace riseml {
namespace {

using kernels::Isa;

std::vector<Isa> isas() {
  std::vector<Isa> v{Isa::generic};
  if (kernels::best_isa() == Isa::avx2_f16c) v.push_back(Isa::avx2_f16c);
  return v;
}

// One element of a op b the slow, obvious way.
void scalar_reduce(DataType t, ReduceOp op, std::byte* out, const std::byte* a,
                   const std::byte* b) {
  auto pick = [&](auto x, auto y) {
    using T = decltype(x);
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::average: return T(x + y);
      case ReduceOp::product: return T(x * y);
      case ReduceOp::min: return y < x ? y : x;
      case ReduceOp::max: return x < y ? y : x;
    }
    return x;
  };
  switch (t) {
    case DataType::float32: { float x, y; std::memcpy(&x, a, 4); std::memcpy(&y, b, 4); float r = pick(x, y); std::memcpy(out, &r, 4); break; }
    case DataType::float64: { double x, y; std::memcpy(&x, a, 8); std::memcpy(&y, b, 8); double r = pick(x, y); std::memcpy(out, &r, 8); break; }
    case DataType::int32: { std::uint32_t x, y; std::memcpy(&x, a, 4); std::memcpy(&y, b, 4);
      std::int32_t r;
      if (op == ReduceOp::min || op == ReduceOp::max) r = pick(std::int32_t(x), std::int32_t(y)); else r = std::int32_t(pick(x, y));
      std::memcpy(out, &r, 4); break; }
    case DataType::int64: { std::uint64_t x, y; std::memcpy(&x, a, 8); std::memcpy(&y, b, 8);
      std::int64_t r;
      if (op == ReduceOp::min || op == ReduceOp::max) r = pick(std::int64_t(x), std::int64_t(y)); else r = std::int64_t(pick(x, y));
      std::memcpy(out, &r, 8); break; }
    case DataType::uint8: { unsigned x = unsigned(a[0]), y = unsigned(b[0]); out[0] = std::byte(static_cast<std::uint8_t>(pick(x, y))); break; }
    case DataType::int8: { std::int8_t x, y; std::memcpy(&x, a, 1); std::memcpy(&y, b, 1);
      // Wrapping sum and product in unsigned, min and max signed.
      std::int8_t r;
      if (op == ReduceOp::min || op == ReduceOp::max) r = pick(x, y);
      else r = static_cast<std::int8_t>(static_cast<std::uint8_t>(pick(unsigned(std::uint8_t(x)), unsigned(std::uint8_t(y)))));
      std::memcpy(out, &r, 1); break; }
    case DataType::int16: { std::int16_t x, y; std::memcpy(&x, a, 2); std::memcpy(&y, b, 2);
      std::int16_t r;
      if (op == ReduceOp::min || op == ReduceOp::max) r = pick(x, y);
      else r = static_cast<std::int16_t>(static_cast<std::uint16_t>(pick(unsigned(std::uint16_t(x)), unsigned(std::uint16_t(y)))));
      std::memcpy(out, &r, 2); break; }
    case DataType::boolean: {  // any nonzero byte is true; the result is 0 or 1
      const bool x = a[0] != std::byte{0}, y = b[0] != std::byte{0};
      const bool any = op == ReduceOp::sum || op == ReduceOp::average || op == ReduceOp::max;
      out[0] = std::byte(static_cast<std::uint8_t>(any ? (x || y) : (x && y))); break; }
    case DataType::float16: case DataType::bfloat16: {
      std::uint16_t x, y; std::memcpy(&x, a, 2); std::memcpy(&y, b, 2);
      const bool h = t == DataType::float16;
      float fx = h ? kernels::float16_to_float(x) : kernels::bfloat16_to_float(x);
      float fy = h ? kernels::float16_to_float(y) : kernels::bfloat16_to_float(y);
      std::uint16_t r = h ? kernels::float_to_float16(pick(fx, fy)) : kernels::float_to_bfloat16(pick(fx, fy));
      std::memcpy(out, &r, 2); break; }
  }
}

std::vector<std::byte> random_bytes_for(DataType t, std::size_t n, std::mt19937& rng) {
  std::vector<std::byte> v(n * element_size(t) + 16);
  std::uniform_real_distribution<double> d(-100, 100);
  for (std::size_t i = 0; i < n; ++i) {
    const double x = d(rng);
    std::byte* p = v.data() + i * element_size(t);
    switch (t) {
      case DataType::float32: { float f = float(x); std::memcpy(p, &f, 4); break; }
      case DataType::float64: std::memcpy(p, &x, 8); break;
      case DataType::float16: { auto h = kernels::float_to_float16(float(x)); std::memcpy(p, &h, 2); break; }
      case DataType::bfloat16: { auto h = kernels::float_to_bfloat16(float(x)); std::memcpy(p, &h, 2); break; }
      case DataType::int32: { std::int32_t k = std::int32_t(rng()); std::memcpy(p, &k, 4); break; }
      case DataType::int64: { std::int64_t k = std::int64_t(rng()) << 32 | rng(); std::memcpy(p, &k, 8); break; }
      case DataType::uint8: p[0] = std::byte(std::uint8_t(rng())); break;
      case DataType::int8: p[0] = std::byte(std::uint8_t(rng())); break;
      case DataType::int16: { std::uint16_t k = std::uint16_t(rng()); std::memcpy(p, &k, 2); break; }
      // Mostly 0 and 1, some other bytes (which count as true).
      case DataType::boolean: { const auto k = rng() % 8; p[0] = std::byte(std::uint8_t(k < 4 ? k % 2 : (k < 7 ? 1 : 0x80))); break; }
    }
  }
  return v;
}

TEST(ReduceKernels, MatchScalarReferenceForEveryTypeOpAndIsa) {
  std::mt19937 rng(42);
  for (Isa isa : isas())
    for (DataType t : kAllDataTypes)
      for (ReduceOp op : kAllReduceOps)
        for (std::size_t n : {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 1000, 4099}) {
          const std::size_t es = element_size(t);
          auto a = random_bytes_for(t, n + 1, rng);
          auto b = random_bytes_for(t, n + 1, rng);
          // Offset by one element: misaligned for the vector loads.
          std::vector<std::byte> out(a.size()), want(a.size());
          kernels::reduce(isa, t, op, out.data() + es, a.data() + es, b.data() + es, n);
          for (std::size_t i = 1; i <= n; ++i)
            scalar_reduce(t, op, want.data() + i * es, a.data() + i * es, b.data() + i * es);
          ASSERT_EQ(0, std::memcmp(out.data() + es, want.data() + es, n * es))
              << to_string(t) << " " << to_string(op) << " n=" << n << " " << kernels::to_string(isa);
          // In place (out == a) gives the same.
          kernels::reduce(isa, t, op, a.data() + es, a.data() + es, b.data() + es, n);
          ASSERT_EQ(0, std::memcmp(a.data() + es, want.data() + es, n * es));
        }
}

TEST(HalfFloat, Float16ConversionsMatchHardwareOnEveryValue) {
  // Every float16 widens exactly; narrowing rounds to nearest even like F16C.
  std::vector<std::uint16_t> all(65536);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
  for (Isa isa : isas()) {
    std::vector<float> wide(all.size());
    kernels::widen_to_float(isa, DataType::float16, all.data(), wide.data(), all.size());
    std::vector<std::uint16_t> back(all.size());
    kernels::narrow_from_float(isa, DataType::float16, wide.data(), back.data(), all.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(wide[i]),
                std::bit_cast<std::uint32_t>(kernels::float16_to_float(all[i])));
      const bool nan = std::isnan(wide[i]);
      if (!nan) {
        ASSERT_EQ(back[i], all[i]) << i;
      }
    }
  }
  std::mt19937 rng(7);
  std::vector<float> f(100000);
  for (auto& x : f) x = std::bit_cast<float>(static_cast<std::uint32_t>(rng()) & 0xbfffffffu) ;
  std::vector<std::uint16_t> hw(f.size()), sw(f.size());
  for (Isa isa : isas()) {
    kernels::narrow_from_float(isa, DataType::float16, f.data(), hw.data(), f.size());
    for (std::size_t i = 0; i < f.size(); ++i) sw[i] = kernels::float_to_float16(f[i]);
    for (std::size_t i = 0; i < f.size(); ++i)
      if (!std::isnan(f[i])) {
        ASSERT_EQ(hw[i], sw[i]) << f[i];
      }
  }
}

TEST(HalfFloat, RoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between two float16 values: ties go to the even one (1.0).
  EXPECT_EQ(kernels::float_to_float16(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(kernels::float_to_float16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  EXPECT_EQ(kernels::float_to_float16(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(kernels::float_to_float16(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(kernels::float_to_float16(0x1p-25f), 0x0000);  // tie to even zero
  EXPECT_EQ(kernels::float_to_float16(0x1.8p-25f), 0x0001);
  EXPECT_EQ(kernels::float_to_bfloat16(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(kernels::float_to_bfloat16(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_TRUE(std::isnan(kernels::bfloat16_to_float(kernels::float_to_bfloat16(NAN))));
}

TEST(HalfFloat, SixteenBitSumsAccumulateInFloat32) {
  // 2048 + 1 is not a float16; adding in float32 and rounding once keeps 2048 + 2 = 2050.
  const std::uint16_t a = kernels::float_to_float16(2048.0f), b = kernels::float_to_float16(2.0f);
  for (Isa isa : isas()) {
    std::uint16_t out = 0;
    kernels::reduce(isa, DataType::float16, ReduceOp::sum, &out, &a, &b, 1);
    EXPECT_EQ(kernels::float16_to_float(out), 2050.0f);
  }
}

// Integers truncate toward zero, as Horovod (its tests: torch.div(..., rounding_mode='trunc')).
TEST(ReduceKernels, DivideTruncatesIntegersAndRoundsHalfFloats) {
  std::int32_t ints[4] = {7, -7, 9, -8};
  kernels::divide(DataType::int32, ints, 4, 2);
  EXPECT_EQ(ints[0], 3);
  EXPECT_EQ(ints[1], -3);
  EXPECT_EQ(ints[2], 4);
  EXPECT_EQ(ints[3], -4);
  std::int64_t big[2] = {-75, 75};
  kernels::divide(DataType::int64, big, 2, 2);
  EXPECT_EQ(big[0], -37);
  EXPECT_EQ(big[1], 37);
  std::uint16_t h = kernels::float_to_float16(3.0f);
  kernels::divide(DataType::float16, &h, 1, 2);
  EXPECT_EQ(kernels::float16_to_float(h), 1.5f);
}

// A power-of-two divisor multiplies by its exact inverse: the bits of the division for any
// float32 and float64 pattern (normal, subnormal, zero, infinity, NaN), and so for every other
// divisor the division itself.
TEST(ReduceKernels, FloatDivideGivesTheDivisionsBitsForEveryDivisor) {
  std::mt19937_64 random(37);
  std::vector<float> f(100003);
  std::vector<double> d(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) {
    const std::uint64_t bits = random();
    const auto low = static_cast<std::uint32_t>(bits);
    // Every fourth a subnormal or tiny normal, where a division by 2^k rounds.
    const std::uint32_t f_bits = i % 4 == 0 ? (low & 0x80ffffffu) : low;
    const std::uint64_t d_bits = i % 4 == 0 ? (bits & 0x801fffffffffffffull) : bits;
    std::memcpy(&f[i], &f_bits, 4);
    std::memcpy(&d[i], &d_bits, 8);
  }
  f[0] = 0.0f, f[1] = -0.0f, f[2] = std::numeric_limits<float>::infinity();
  d[0] = -0.0, d[1] = std::numeric_limits<double>::denorm_min(), d[2] = -std::numeric_limits<double>::infinity();
  for (int divisor : {1, 2, 3, 4, 8, 64, 1024, 4096, 1 << 20, 1 << 30}) {
    std::vector<float> got_f = f;
    std::vector<double> got_d = d;
    kernels::divide(DataType::float32, got_f.data(), got_f.size(), divisor);
    kernels::divide(DataType::float64, got_d.data(), got_d.size(), divisor);
    for (std::size_t i = 0; i < f.size(); ++i) {
      const float want_f = f[i] / static_cast<float>(divisor);
      const double want_d = d[i] / static_cast<double>(divisor);
      if (std::isnan(want_f))
        ASSERT_TRUE(std::isnan(got_f[i])) << i << " / " << divisor;
      else
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got_f[i]), std::bit_cast<std::uint32_t>(want_f))
            << "float32 " << f[i] << " / " << divisor;
      if (std::isnan(want_d))
        ASSERT_TRUE(std::isnan(got_d[i])) << i << " / " << divisor;
      else
        ASSERT_EQ(std::bit_cast<std::uint64_t>(got_d[i]), std::bit_cast<std::uint64_t>(want_d))
            << "float64 " << d[i] << " / " << divisor;
    }
  }
}

// The blocked, vectorised half-precision divide gives the bits of the one-element reference
// (exact widening, a float32 division, one rounding to nearest even) for every 16-bit pattern,
// in a buffer that is not a whole number of blocks.
TEST(ReduceKernels, HalfFloatDivideMatchesTheScalarReferenceForEveryPattern) {
  for (DataType t : {DataType::float16, DataType::bfloat16}) {
    const bool f16 = t == DataType::float16;
    std::vector<std::uint16_t> all(65536 + 37);
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
    for (int divisor : {2, 3, 7, 128, 1000, 4096}) {
      std::vector<std::uint16_t> got = all;
      kernels::divide(t, got.data(), got.size(), divisor);
      for (std::size_t i = 0; i < all.size(); ++i) {
        const float x = f16 ? kernels::float16_to_float(all[i]) : kernels::bfloat16_to_float(all[i]);
        const float q = x / static_cast<float>(divisor);
        const std::uint16_t want = f16 ? kernels::float_to_float16(q) : kernels::float_to_bfloat16(q);
        const float back = f16 ? kernels::float16_to_float(got[i]) : kernels::bfloat16_to_float(got[i]);
        if (std::isnan(q)) {
          ASSERT_TRUE(std::isnan(back)) << to_string(t) << " pattern " << all[i] << " / " << divisor;
        } else {
          ASSERT_EQ(got[i], want) << to_string(t) << " pattern " << all[i] << " / " << divisor;
        }
      }
    }
  }
}

// int8 and int16 averages round as int32's do, whatever values come (negative ones included).
TEST(ReduceKernels, SmallIntegersDivideAsInt32AndBoolHasNoAverage) {
  const std::int32_t values[] = {-128, -127, -7, -6, -1, 0, 1, 5, 7, 126, 127};
  for (int divisor : {1, 2, 3, 7, 64, 300}) {
    std::int32_t wide[std::size(values)];
    std::int8_t i8[std::size(values)];
    std::int16_t i16[std::size(values)];
    for (std::size_t k = 0; k < std::size(values); ++k) {
      wide[k] = values[k];
      i8[k] = static_cast<std::int8_t>(values[k]);
      i16[k] = static_cast<std::int16_t>(values[k] * 200);
    }
    kernels::divide(DataType::int32, wide, std::size(values), divisor);
    kernels::divide(DataType::int8, i8, std::size(values), divisor);
    kernels::divide(DataType::int16, i16, std::size(values), divisor);
    for (std::size_t k = 0; k < std::size(values); ++k) {
      EXPECT_EQ(i8[k], wide[k]) << values[k] << " / " << divisor;
      std::int32_t w = values[k] * 200;
      kernels::divide(DataType::int32, &w, 1, divisor);
      EXPECT_EQ(i16[k], w) << values[k] * 200 << " / " << divisor;
    }
  }
  std::uint8_t b = 1;
  EXPECT_THROW(kernels::divide(DataType::boolean, &b, 1, 2), std::invalid_argument);
}

TEST(ReduceKernels, SmallIntegersWrapAndBoolIsOrAndAnd) {
  for (Isa isa : isas()) {
    const std::int8_t a8[2] = {127, -128}, b8[2] = {1, -1};
    std::int8_t o8[2];
    kernels::reduce(isa, DataType::int8, ReduceOp::sum, o8, a8, b8, 2);
    EXPECT_EQ(o8[0], -128);
    EXPECT_EQ(o8[1], 127);
    const std::int16_t a16[1] = {300}, b16[1] = {300};
    std::int16_t o16[1];
    kernels::reduce(isa, DataType::int16, ReduceOp::product, o16, a16, b16, 1);
    EXPECT_EQ(o16[0], static_cast<std::int16_t>(90000 - 65536));
    const std::uint8_t x[4] = {0, 0, 1, 7}, y[4] = {0, 1, 0, 1};
    std::uint8_t o[4];
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max}) {
      kernels::reduce(isa, DataType::boolean, op, o, x, y, 4);
      EXPECT_EQ(o[0], 0); EXPECT_EQ(o[1], 1); EXPECT_EQ(o[2], 1); EXPECT_EQ(o[3], 1);
    }
    for (ReduceOp op : {ReduceOp::product, ReduceOp::min}) {
      kernels::reduce(isa, DataType::boolean, op, o, x, y, 4);
      EXPECT_EQ(o[0], 0); EXPECT_EQ(o[1], 0); EXPECT_EQ(o[2], 0); EXPECT_EQ(o[3], 1);
    }
  }
}

// Averaging over more ranks than the type can count: the divisor must not wrap (uint8 / 256
// used to divide by zero).
TEST(ReduceKernels, DivideByMoreRanksThanTheTypeHolds) {
  std::uint8_t bytes[2] = {255, 200};
  kernels::divide(DataType::uint8, bytes, 2, 256);
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[1], 0);
  std::uint8_t small[1] = {250};
  kernels::divide(DataType::uint8, small, 1, 100);
  EXPECT_EQ(small[0], 2);
}

}  // namespace
}  // namespace riseml


namespace riseml {
namespace {

// Non-temporal stores only for large blocks of calls that do not fit in the last-level cache.
TEST(StreamingRule, LargeBlocksOfCallsBeyondTheCacheOnly) {
  const CommunicatorOptions o;
  const std::size_t huge = std::size_t{1} << 40;
  EXPECT_FALSE(streaming_pays(o, (4 << 20) - 1, huge)) << "a block under 4 MiB never streams";
  EXPECT_TRUE(streaming_pays(o, 4 << 20, huge)) << "a call far beyond any cache streams";
  EXPECT_FALSE(streaming_pays(o, 4 << 20, 0)) << "a call that touches nothing fits every cache";
}

TEST(StreamingRule, NeverWhenTheOptionIsOff) {
  CommunicatorOptions o;
  o.streaming_stores = false;
  EXPECT_FALSE(streaming_pays(o, 4 << 20, std::size_t{1} << 40));
}

}  // namespace
}  // namespace riseml
