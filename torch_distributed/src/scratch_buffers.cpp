#include "scratch_buffers.hpp"

#include <ATen/ATen.h>

namespace riseml::torch_distributed {

at::Tensor ScratchBuffers::take(int slot, int64_t numel, const at::TensorOptions& options) {
  const int64_t bytes = numel * static_cast<int64_t>(options.dtype().itemsize());
  at::Tensor& buffer = bytes_.at(static_cast<std::size_t>(slot));
  if (!buffer.defined() || buffer.numel() < bytes)
    buffer = at::empty({std::max<int64_t>(bytes, 64)}, at::TensorOptions().dtype(at::kByte));
  return buffer.narrow(0, 0, bytes).view(options.dtype().toScalarType());
}

void* back_to_back(const std::vector<at::Tensor>& tensors) {
  if (tensors.empty()) return nullptr;
  auto* next = static_cast<char*>(tensors.front().data_ptr());
  for (const auto& t : tensors) {
    if (!t.is_contiguous() || t.scalar_type() != tensors.front().scalar_type() ||
        t.data_ptr() != next)
      return nullptr;
    next += t.nbytes();
  }
  return tensors.front().data_ptr();
}

}  // namespace riseml::torch_distributed
