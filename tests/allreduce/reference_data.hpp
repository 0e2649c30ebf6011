// Test data whose reductions are exact in every type (small integers, powers of two), and a
// scalar reference that computes them the way the issue specifies: integers wrap, 16-bit
// floats are accumulated exactly and rounded once, average divides the sum (integers
// truncate), bool is or (sum,
// max) and and (product, min) and has no average.
#pragma once

#include <riseml/datatype.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include <riseml/half_float.hpp>
#include <riseml/reduce_kernels.hpp>

namespace riseml::test {

inline double test_value(ReduceOp op, DataType t, int rank, std::size_t i) {
  const long r = rank;
  const long k = static_cast<long>(i % 100003);
  if (t == DataType::boolean) {
    // "any" (sum, max) mostly false, "all" (product, min) mostly true: both results occur.
    if (op == ReduceOp::product || op == ReduceOp::min) return (r + k) % 7 == 0 ? 0.0 : 1.0;
    return (r * 7 + k * 3) % 11 == 0 ? 1.0 : 0.0;
  }
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::average:
      return t == DataType::uint8 ? double((r * 7 + k * 3) % 5) : double((r * 7 + k * 3) % 9 - 4);
    case ReduceOp::min:
    case ReduceOp::max:
      return t == DataType::uint8 ? double((r * 31 + k * 17) % 256)
                                  : double((r * 31 + k * 17) % 201 - 100);
    case ReduceOp::product: {
      const bool is_float = t == DataType::float32 || t == DataType::float64 ||
                            t == DataType::float16 || t == DataType::bfloat16;
      if ((r + k) % 7 == 0) return is_float && r % 2 == 0 ? 0.5 : 2.0;
      return (t != DataType::uint8 && (r * k) % 2) ? -1.0 : 1.0;
    }
  }
  return 0;
}

inline void store(DataType t, std::byte* p, std::size_t i, double v) {
  switch (t) {
    case DataType::float32: { float x = float(v); std::memcpy(p + i * 4, &x, 4); break; }
    case DataType::float64: std::memcpy(p + i * 8, &v, 8); break;
    case DataType::float16: { auto h = kernels::float_to_float16(float(v)); std::memcpy(p + i * 2, &h, 2); break; }
    case DataType::bfloat16: { auto h = kernels::float_to_bfloat16(float(v)); std::memcpy(p + i * 2, &h, 2); break; }
    case DataType::int32: { auto x = std::int32_t(v); std::memcpy(p + i * 4, &x, 4); break; }
    case DataType::int64: { auto x = std::int64_t(v); std::memcpy(p + i * 8, &x, 8); break; }
    case DataType::uint8: { auto x = static_cast<std::uint8_t>(static_cast<int>(v)); p[i] = std::byte{x}; break; }
    case DataType::int8: { auto x = static_cast<std::int8_t>(static_cast<int>(v)); std::memcpy(p + i, &x, 1); break; }
    case DataType::int16: { auto x = static_cast<std::int16_t>(static_cast<int>(v)); std::memcpy(p + i * 2, &x, 2); break; }
    case DataType::boolean: p[i] = std::byte{static_cast<std::uint8_t>(v != 0 ? 1 : 0)}; break;
  }
}

inline std::vector<std::byte> make_input(ReduceOp op, DataType t, int rank, std::size_t count) {
  std::vector<std::byte> v(count * element_size(t) + 1);  // +1: never a null data()
  for (std::size_t i = 0; i < count; ++i) store(t, v.data(), i, test_value(op, t, rank, i));
  return v;
}

// The exact result of reducing test_value over `n` ranks.
inline std::vector<std::byte> expected_result(ReduceOp op, DataType t, int n, std::size_t count) {
  std::vector<std::byte> v(count * element_size(t) + 1);
  for (std::size_t i = 0; i < count; ++i) {
    if (t == DataType::boolean) {  // or for sum and max, and for product and min
      const bool any = op != ReduceOp::product && op != ReduceOp::min;
      bool acc = !any;
      for (int r = 0; r < n; ++r) {
        const bool x = test_value(op, t, r, i) != 0;
        acc = any ? (acc || x) : (acc && x);
      }
      v[i] = std::byte{static_cast<std::uint8_t>(acc)};
      continue;
    }
    // Integers in 64-bit wrapping arithmetic, then truncated to the type (wraps the same way).
    if (t == DataType::int32 || t == DataType::int64 || t == DataType::uint8 ||
        t == DataType::int8 || t == DataType::int16) {
      std::uint64_t acc = 0;
      std::int64_t best = 0;
      for (int r = 0; r < n; ++r) {
        const auto x = static_cast<std::int64_t>(test_value(op, t, r, i));
        if (r == 0) { acc = static_cast<std::uint64_t>(x); best = x; continue; }
        if (op == ReduceOp::sum || op == ReduceOp::average) acc += static_cast<std::uint64_t>(x);
        if (op == ReduceOp::product) acc *= static_cast<std::uint64_t>(x);
        if (op == ReduceOp::min && x < best) best = x;
        if (op == ReduceOp::max && x > best) best = x;
      }
      std::int64_t result = (op == ReduceOp::min || op == ReduceOp::max) ? best : static_cast<std::int64_t>(acc);
      if (t == DataType::int32) {
        std::int32_t x = static_cast<std::int32_t>(static_cast<std::uint32_t>(result));
        if (op == ReduceOp::average) x = static_cast<std::int32_t>(x / n);
        std::memcpy(v.data() + i * 4, &x, 4);
      } else if (t == DataType::int64) {
        if (op == ReduceOp::average) result /= n;
        std::memcpy(v.data() + i * 8, &result, 8);
      } else if (t == DataType::int16 || t == DataType::int8) {
        // Average rounds as the wider integers do (the kernels test pins that rule down).
        std::int32_t x = t == DataType::int16
                             ? static_cast<std::int16_t>(static_cast<std::uint16_t>(result))
                             : static_cast<std::int8_t>(static_cast<std::uint8_t>(result));
        if (op == ReduceOp::average) kernels::divide(DataType::int32, &x, 1, n);
        if (t == DataType::int16) {
          const auto y = static_cast<std::int16_t>(x);
          std::memcpy(v.data() + i * 2, &y, 2);
        } else {
          const auto y = static_cast<std::int8_t>(x);
          std::memcpy(v.data() + i, &y, 1);
        }
      } else {
        std::uint8_t x = static_cast<std::uint8_t>(result);
        if (op == ReduceOp::average) x = static_cast<std::uint8_t>(x / n);
        v[i] = std::byte{x};
      }
      continue;
    }
    double acc = test_value(op, t, 0, i);
    for (int r = 1; r < n; ++r) {
      const double x = test_value(op, t, r, i);
      if (op == ReduceOp::sum || op == ReduceOp::average) acc += x;
      if (op == ReduceOp::product) acc *= x;
      if (op == ReduceOp::min && x < acc) acc = x;
      if (op == ReduceOp::max && x > acc) acc = x;
    }
    if (op == ReduceOp::average) {
      if (t == DataType::float64) acc = acc / n;
      else acc = double(float(acc) / float(n));  // float32 (16-bit types: then rounded once)
    }
    store(t, v.data(), i, acc);
  }
  return v;
}

}  // namespace riseml::test
