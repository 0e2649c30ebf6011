#include "tensor_types.hpp"

#include "device_path.hpp"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

namespace riseml::torch_distributed {

namespace {

[[noreturn]] void refuse(std::string_view operation, const std::string& why) {
  throw std::invalid_argument("riseml " + std::string(operation) + ": " + why);
}

struct CoreType {
  DataType type;
  std::size_t per_element;  // core elements per tensor element
};

std::optional<CoreType> core_type(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return CoreType{DataType::float32, 1};
    case at::kDouble: return CoreType{DataType::float64, 1};
    case at::kHalf: return CoreType{DataType::float16, 1};
    case at::kBFloat16: return CoreType{DataType::bfloat16, 1};
    case at::kInt: return CoreType{DataType::int32, 1};
    case at::kLong: return CoreType{DataType::int64, 1};
    case at::kShort: return CoreType{DataType::int16, 1};
    case at::kChar: return CoreType{DataType::int8, 1};
    case at::kByte: return CoreType{DataType::uint8, 1};
    case at::kBool: return CoreType{DataType::boolean, 1};
    case at::kComplexFloat: return CoreType{DataType::float32, 2};
    case at::kComplexDouble: return CoreType{DataType::float64, 2};
    case at::kComplexHalf: return CoreType{DataType::float16, 2};
    default: return std::nullopt;
  }
}

void check_dense(const at::Tensor& tensor, std::string_view operation) {
  if (tensor.layout() != at::kStrided)
    refuse(operation, "only dense tensors are supported (got a sparse tensor; call "
                      ".to_dense() first)");
  if (!tensor.is_contiguous())
    refuse(operation, "Tensors must be contiguous (call .contiguous() first)");
}

// A dense, contiguous tensor of a dtype the core knows, on whichever device.
CoreView tensor_view(const at::Tensor& tensor, std::string_view operation) {
  check_dense(tensor, operation);
  const auto core = core_type(tensor.scalar_type());
  if (!core)
    refuse(operation, std::string("tensors of dtype ") + c10::toString(tensor.scalar_type()) +
                          " are not supported");
  return CoreView{core->type, static_cast<std::size_t>(tensor.numel()) * core->per_element,
                  tensor.data_ptr()};
}

}  // namespace

CoreView core_view(const at::Tensor& tensor, std::string_view operation) {
  if (!tensor.defined()) refuse(operation, "a tensor argument is undefined");
  if (tensor.is_cuda()) throw std::invalid_argument(device_refusal(operation));
  if (!tensor.device().is_cpu())
    refuse(operation, "tensors must be CPU or CUDA tensors; the riseml backend has no path for " +
                          tensor.device().str() + " tensors");
  return tensor_view(tensor, operation);
}

CoreView device_view(const at::Tensor& tensor, std::string_view operation) {
  if (!tensor.defined()) refuse(operation, "a tensor argument is undefined");
  const auto t = tensor.scalar_type();
  if (t == at::kShort || t == at::kBool)
    refuse(operation, std::string("CUDA tensors of dtype ") + c10::toString(t) +
                          " are not supported (NCCL has no such type); use another dtype, or "
                          "init_process_group(backend=\"cpu:riseml,cuda:nccl\")");
  return tensor_view(tensor, operation);
}

ByteView device_bytes(const at::Tensor& tensor, std::string_view operation) {
  if (!tensor.defined()) refuse(operation, "a tensor argument is undefined");
  check_dense(tensor, operation);
  return ByteView{tensor.data_ptr(), static_cast<std::size_t>(tensor.nbytes())};
}

ReduceOp device_reduction(const c10d::ReduceOp& op, const at::Tensor& tensor,
                          std::string_view operation) {
  const Reduction r = reduction_for(op, tensor, operation);
  if (r.bitwise != Bitwise::none)
    refuse(operation, "BAND, BOR and BXOR are not supported on CUDA tensors; use "
                      "init_process_group(backend=\"cpu:riseml,cuda:nccl\") for them");
  if (r.op == ReduceOp::average && !tensor.is_floating_point() && !tensor.is_complex())
    refuse(operation, std::string("AVG of ") + c10::toString(tensor.scalar_type()) +
                          " CUDA tensors is not supported (use SUM, then divide)");
  return r.op;
}


Reduction reduction_for(const c10d::ReduceOp& op, const at::Tensor& tensor,
                        std::string_view operation) {
  const bool complex = tensor.is_complex();
  const bool floating = tensor.is_floating_point() || complex;
  Reduction r;
  switch (op.op_) {
    case c10d::ReduceOp::SUM: r.op = ReduceOp::sum; return r;
    case c10d::ReduceOp::AVG: r.op = ReduceOp::average; return r;
    case c10d::ReduceOp::PRODUCT: r.op = ReduceOp::product; break;
    case c10d::ReduceOp::MIN: r.op = ReduceOp::min; break;
    case c10d::ReduceOp::MAX: r.op = ReduceOp::max; break;
    case c10d::ReduceOp::BAND: r.bitwise = Bitwise::band; break;
    case c10d::ReduceOp::BOR: r.bitwise = Bitwise::bor; break;
    case c10d::ReduceOp::BXOR: r.bitwise = Bitwise::bxor; break;
    default:
      refuse(operation, "this reduce op is not supported (PREMUL_SUM is NCCL's alone)");
  }
  if (complex) refuse(operation, "complex tensors reduce only with SUM and AVG");
  if (r.bitwise != Bitwise::none && floating)
    refuse(operation, "BAND, BOR and BXOR need integer or bool tensors, not " +
                          std::string(c10::toString(tensor.scalar_type())));
  return r;
}

void fold_bitwise(Bitwise op, at::Tensor& into, const std::vector<at::Tensor>& parts) {
  at::Tensor acc = parts.at(0).clone();
  for (std::size_t i = 1; i < parts.size(); ++i) {
    switch (op) {
      case Bitwise::band: acc.bitwise_and_(parts[i]); break;
      case Bitwise::bor: acc.bitwise_or_(parts[i]); break;
      case Bitwise::bxor: acc.bitwise_xor_(parts[i]); break;
      case Bitwise::none: break;
    }
  }
  into.copy_(acc.view(into.sizes()));
}

void check_same_shape(const std::vector<at::Tensor>& tensors, const at::Tensor& like,
                      std::string_view operation, std::string_view which) {
  for (const auto& t : tensors) {
    if (t.scalar_type() != like.scalar_type())
      refuse(operation, std::string(which) + " tensors must have the input's dtype (" +
                            c10::toString(like.scalar_type()) + "), got " +
                            c10::toString(t.scalar_type()));
    if (t.numel() != like.numel())
      refuse(operation, std::string(which) + " tensors must have as many elements as the "
                        "input (" + std::to_string(like.numel()) + "), got " +
                        std::to_string(t.numel()));
  }
}

}  // namespace riseml::torch_distributed
