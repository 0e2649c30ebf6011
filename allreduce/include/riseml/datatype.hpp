// The element types and reduction operations the collectives understand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace riseml {

// boolean: one byte, 0 or 1; sum and max reduce as logical or, product and min as logical and.
enum class DataType : std::uint8_t {
  float32, float64, float16, bfloat16, int32, int64, uint8, int8, int16, boolean
};
enum class ReduceOp : std::uint8_t { sum, average, min, max, product };

inline constexpr DataType kAllDataTypes[] = {DataType::float32, DataType::float64,
                                             DataType::float16, DataType::bfloat16,
                                             DataType::int32,   DataType::int64,
                                             DataType::uint8,   DataType::int8,
                                             DataType::int16,   DataType::boolean};
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::sum, ReduceOp::average, ReduceOp::min,
                                             ReduceOp::max, ReduceOp::product};

constexpr std::size_t element_size(DataType t) {
  switch (t) {
    case DataType::float64:
    case DataType::int64: return 8;
    case DataType::float32:
    case DataType::int32: return 4;
    case DataType::float16:
    case DataType::bfloat16:
    case DataType::int16: return 2;
    case DataType::uint8:
    case DataType::int8:
    case DataType::boolean: return 1;
  }
  return 0;
}

constexpr bool is_half_precision(DataType t) {
  return t == DataType::float16 || t == DataType::bfloat16;
}

std::string_view to_string(DataType t);
std::string_view to_string(ReduceOp op);
std::optional<DataType> parse_data_type(std::string_view name);  // "float32", "fp16", "bf16", ...
std::optional<ReduceOp> parse_reduce_op(std::string_view name);  // "sum", "avg", ...

}  // namespace riseml
