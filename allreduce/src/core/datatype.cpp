#include <riseml/datatype.hpp>

namespace riseml {

std::string_view to_string(DataType t) {
  switch (t) {
    case DataType::float32: return "float32";
    case DataType::float64: return "float64";
    case DataType::float16: return "float16";
    case DataType::bfloat16: return "bfloat16";
    case DataType::int32: return "int32";
    case DataType::int64: return "int64";
    case DataType::uint8: return "uint8";
    case DataType::int8: return "int8";
    case DataType::int16: return "int16";
    case DataType::boolean: return "bool";
  }
  return "?";
}

std::string_view to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::average: return "average";
    case ReduceOp::min: return "min";
    case ReduceOp::max: return "max";
    case ReduceOp::product: return "product";
  }
  return "?";
}

std::optional<DataType> parse_data_type(std::string_view n) {
  for (DataType t : kAllDataTypes)
    if (n == to_string(t)) return t;
  if (n == "float" || n == "fp32") return DataType::float32;
  if (n == "double" || n == "fp64") return DataType::float64;
  if (n == "half" || n == "fp16") return DataType::float16;
  if (n == "bf16") return DataType::bfloat16;
  if (n == "int") return DataType::int32;
  if (n == "boolean") return DataType::boolean;
  return std::nullopt;
}

std::optional<ReduceOp> parse_reduce_op(std::string_view n) {
  for (ReduceOp op : kAllReduceOps)
    if (n == to_string(op)) return op;
  if (n == "avg" || n == "mean") return ReduceOp::average;
  if (n == "prod") return ReduceOp::product;
  return std::nullopt;
}

}  // namespace riseml
