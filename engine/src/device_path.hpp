// The engine's GPU side: device tensors are fused in GPU memory, scaled by CUDA kernels and
// reduced by riseml::cuda::GpuCollectives (NCCL, or NCCL in a host + the CPU ring across).
// device_path_cuda.cpp implements it in a build with GPU support, device_path_none.cpp (every
// call: "this build has no GPU support ...") otherwise.
#pragma once

#include <riseml/communicator.hpp>
#include <riseml/cuda/gpu_options.hpp>
#include <riseml/datatype.hpp>

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace riseml::engine {

// Taken on the caller's thread at enqueue(): the point on the caller's CUDA stream after which
// its device tensors are ready. Throws CollectiveError(invalid_argument) without GPU support.
using ReadyMarker = std::shared_ptr<void>;
ReadyMarker mark_ready(int device, void* stream);

// One tensor of a device collective. input == nullptr: this rank has joined and contributes
// zeros (allreduce) or nothing, and output is null too; `ready` may then be null.
struct DeviceTensor {
  const void* input = nullptr;
  void* output = nullptr;
  std::size_t count = 0;
  const ReadyMarker* ready = nullptr;
};

class DevicePath {
 public:
  // Collective over every rank of `cpu` (which must outlive it): sets up the NCCL
  // communicator(s) on `device` (-1, a rank that joined before passing a GPU tensor:
  // options.device when >= 0, else its local index on the host modulo the visible devices, the
  // device torch.cuda.set_device(local_rank) would have picked; never the engine thread's
  // default), in options.algorithm.
  static std::unique_ptr<DevicePath> create(Communicator& cpu, int device, const cuda::GpuOptions& options);
  virtual ~DevicePath() = default;

  // One fused allreduce: the tensors are packed into a device fusion buffer (one tensor: in
  // place on its output), prescaled, reduced, postscaled and unpacked. Returns when done.
  virtual void allreduce(std::span<const DeviceTensor> tensors, DataType type, ReduceOp op,
                         double prescale, double postscale) = 0;
  // In place on t.output (t.input copied there first); a joined rank passes no buffers.
  virtual void broadcast(const DeviceTensor& t, DataType type, int root) = 0;
  // counts[r] elements from rank r; the result in a device buffer of the sum of counts.
  virtual std::shared_ptr<void> allgatherv(const DeviceTensor& t,
                                           std::span<const std::size_t> counts,
                                           DataType type) = 0;
};

// For Handle::copy_allgather_output: a device-to-device copy on `stream` (the caller's, so it
// is ordered after the work that allocated `dst`), complete when it returns.
void copy_device_to_device(void* dst, const void* src, std::size_t bytes, void* stream);

}  // namespace riseml::engine
