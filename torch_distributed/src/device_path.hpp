// The backend's path for device tensors: CUDA tensors through riseml's GPU collectives
// (GpuCollectives: NCCL, flat or hierarchical) on the group's own CUDA stream, stream-ordered:
//   caller's thread (begin):  an event on torch's current stream (everything queued before the
//                             call), the tensors recorded as used on our stream (the caching
//                             allocator keeps their memory until our stream is past them);
//   the group's worker (run): the collectives created at the first device op (a collective over
//                             the CPU communicator, so it keeps its place in the group's op order
//                             on every rank); our stream waits for the caller's event, the NCCL
//                             call is queued, a done event recorded, the Work completed under a
//                             stream guard for our stream (its CUDA-aware future then carries it);
//   Work::wait (wait_done):   torch's current stream waits for the done event. No thread
//                             waits for the device, only for the op to be queued.
// Tests only (ProcessGroupOptions::device_standin): a host-memory stand-in that takes CPU
// tensors down the same path (the same ops, checks, lazy set-up in queue order, packing) with the
// CPU communicator in place of NCCL (the group's store for sends and receives) and no streams.
#pragma once

#include <riseml/communicator.hpp>
#include <riseml/peer_transfer.hpp>

#include <ATen/Tensor.h>
#include <c10/core/Device.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace riseml::torch_distributed {

// The collectives a device op may call (what GpuCollectives has), on the path's stream.
class DeviceCollectives {
 public:
  virtual ~DeviceCollectives() = default;
  virtual void allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op) = 0;
  virtual void broadcast(void* buffer, std::size_t count, DataType type, int root) = 0;
  virtual void allgatherv(const void* in, void* out, std::span<const std::size_t> counts,
                          DataType type) = 0;
  // size * count elements of `in` reduced over the ranks; this rank's block of count to `out`.
  virtual void reduce_scatter(const void* in, void* out, std::size_t count, DataType type,
                              ReduceOp op) = 0;
  // send_counts[r] elements of `in` to rank r, recv_counts[r] from rank r into `out`.
  virtual void alltoallv(const void* in, std::span<const std::size_t> send_counts, void* out,
                         std::span<const std::size_t> recv_counts, DataType type) = 0;
  // torch's send and recv: the batch's transfers posted together (NCCL: one group).
  virtual void exchange(std::span<const PeerSend> sends,
                        std::span<const PeerReceive> receives) = 0;
};

// One op's synchronisation with torch's streams.
class DeviceTicket {
 public:
  virtual ~DeviceTicket() = default;
  // Work::wait, after the op was queued on our stream: torch's current stream waits for it
  // (raises the path's failure, once it has one).
  virtual void wait_done() {}
  // Work::isCompleted, after the op was queued: whether the device has done it (torch's nccl
  // Work answers the same).
  virtual bool finished() { return true; }
};

class DevicePath {
 public:
  virtual ~DevicePath() = default;
  // The device the path runs on (the future's devices); empty for the stand-in.
  virtual std::vector<c10::Device> devices() const = 0;
  // On the caller's thread, at the call.
  virtual std::shared_ptr<DeviceTicket> begin(const std::vector<at::Tensor>& used) = 0;
  // On the group's worker, in queue order: `body` with the collectives (created on the first
  // call) on our stream, then `succeed` (under the stream guard). Throws what they throw.
  virtual void run(DeviceTicket& ticket, const std::function<void(DeviceCollectives&)>& body,
                   const std::function<void()>& succeed) = 0;
};

class StoreMailbox;

// The host stand-in over `cpu`, with point-to-point transfers through `mailbox` (both must
// outlive it).
std::unique_ptr<DevicePath> make_host_standin_path(Communicator& cpu, StoreMailbox& mailbox);

// Whether this build takes CUDA tensors (RISEML_TORCH_GPU), and if not, why.
bool gpu_path_built();
std::string gpu_path_why_off();

// CUDA tensors on `device`, collectives over `cpu` with GpuOptions from the environment and
// `timeout`. Only in a build with the GPU path (else throws std::logic_error).
std::unique_ptr<DevicePath> make_gpu_path(Communicator& cpu, c10::Device device,
                                          std::chrono::milliseconds timeout);

// The message for device tensors an op cannot take: on a build with the GPU path, which ops
// can; without it, that this build has no GPU support. Both name the fix.
std::string device_refusal(std::string_view operation);

}  // namespace riseml::torch_distributed
