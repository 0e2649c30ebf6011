// Buffers a process group's jobs reuse from call to call: a fresh 32 MB tensor per
// allgather costs more in page faults than the allgather itself. Also tells when a list of
// tensors already lies back to back in memory, so no buffer and no copy is needed.
#pragma once

#include <ATen/Tensor.h>

#include <array>
#include <cstdint>
#include <vector>

namespace riseml::torch_distributed {

class ScratchBuffers {
 public:
  // A flat tensor of `numel` elements of options' dtype in buffer `slot` (0 or 1), valid until
  // the next take() of that slot. Only a running job calls it (jobs run one at a time).
  at::Tensor take(int slot, int64_t numel, const at::TensorOptions& options);

 private:
  std::array<at::Tensor, 2> bytes_;
};

// When `tensors` are contiguous, of one dtype, and each starts where the one before ends: the
// first's data pointer (the list is one flat buffer); else nullptr.
void* back_to_back(const std::vector<at::Tensor>& tensors);

}  // namespace riseml::torch_distributed
