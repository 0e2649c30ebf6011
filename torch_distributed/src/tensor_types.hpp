// What the core makes of a torch tensor: its element type (complex numbers as pairs of reals),
// how many of them, and which reduction a c10d ReduceOp is. The checks here give the messages
// a user sees for tensors the backend cannot take.
#pragma once

#include <riseml/datatype.hpp>

#include <ATen/Tensor.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace riseml::torch_distributed {

struct CoreView {
  DataType type;
  std::size_t count;  // elements of `type` (twice numel for complex tensors)
  void* data;
};

// A dense, contiguous CPU tensor as the core sees it. Throws std::invalid_argument naming
// `operation` and what is wrong with the tensor (CUDA, sparse, strided, an unknown dtype).
CoreView core_view(const at::Tensor& tensor, std::string_view operation);

// A tensor of a device op (device_path.hpp): a dense, contiguous CUDA tensor (or, with the
// host stand-in, CPU tensor) of a dtype the GPU collectives have (NCCL has no int16 and no
// bool). Throws std::invalid_argument naming `operation` and the fix.
CoreView device_view(const at::Tensor& tensor, std::string_view operation);

// The bytes of a device send or receive, which NCCL moves as bytes (so any dtype): a dense,
// contiguous tensor. Throws std::invalid_argument naming `operation`.
struct ByteView {
  void* data;
  std::size_t bytes;
};
ByteView device_bytes(const at::Tensor& tensor, std::string_view operation);

// The bitwise operations (BAND, BOR, BXOR) the core has no kernel for: done here, after an
// allgather, on integer and bool tensors.
enum class Bitwise { none, band, bor, bxor };

struct Reduction {
  ReduceOp op = ReduceOp::sum;     // when bitwise == none
  Bitwise bitwise = Bitwise::none;
};

// Throws std::invalid_argument when `op` cannot reduce `tensor` (PREMUL_SUM; bitwise on
// floating point; anything but SUM and AVG on complex numbers).
Reduction reduction_for(const c10d::ReduceOp& op, const at::Tensor& tensor,
                        std::string_view operation);

// The reduction of a device op: as reduction_for, and neither bitwise nor the average of
// integers (NCCL has neither).
ReduceOp device_reduction(const c10d::ReduceOp& op, const at::Tensor& tensor,
                          std::string_view operation);

// Folds `parts` (the same shape) into `into` with the bitwise operation.
void fold_bitwise(Bitwise op, at::Tensor& into, const std::vector<at::Tensor>& parts);

// Every tensor has the same dtype and numel as `like`; else std::invalid_argument.
void check_same_shape(const std::vector<at::Tensor>& tensors, const at::Tensor& like,
                      std::string_view operation, std::string_view which);

}  // namespace riseml::torch_distributed
