// The engine's GPU side: device tensors are fused in GPU memory, scaled by CUDA kernels and
// reduced by riseml::cuda::GpuCollectives (NCCL, or NCCL in a host + the CPU ring across).
// device_path_cuda.cpp implements it in a build with GPU support, device_path_none.cpp (every
// call: "this build has no GPU support ...") otherwise, and device_path_host.cpp is the
// host-memory stand-in that tests select (GpuOptions::host_standin).
//
// Stream-ordered: a call enqueues its work on the path's stream after the caller's ready point
// and returns without waiting for the device; done_marker() is the point after it. The path's
// watcher thread completes what when_done() was given once the device reaches that point,
// and fails it (and every later call) when the collective failed or timed out.
#pragma once

#include <riseml/communicator.hpp>
#include <riseml/cuda/gpu_options.hpp>
#include <riseml/datatype.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace riseml::engine {

// A point on a device stream that other streams can be ordered after.
class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
  // Work queued on `stream` (a cudaStream_t; nullptr: the legacy default stream) from now on
  // runs after this point. Never blocks the CPU.
  virtual void order_stream_after(void* stream) const = 0;
};

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
  // Called by the watcher thread: nullopt when the work completed, else why it failed.
  using Completion = std::function<void(const std::optional<CollectiveError>&)>;

  // Collective over every rank of `cpu` (which must outlive it): sets up the NCCL
  // communicator(s) on `device` (-1, a rank that joined before passing a GPU tensor:
  // options.device when >= 0, else its local index on the host modulo the visible devices, the
  // device torch.cuda.set_device(local_rank) would have picked; never the engine thread's
  // default), in options.algorithm. options.host_standin: the host-memory stand-in.
  static std::unique_ptr<DevicePath> create(Communicator& cpu, int device, const cuda::GpuOptions& options);
  virtual ~DevicePath() = default;

  // One fused allreduce: the tensors are packed into a device fusion buffer (one tensor: in
  // place on its output), prescaled, reduced, postscaled and unpacked, all enqueued.
  virtual void allreduce(std::span<const DeviceTensor> tensors, DataType type, ReduceOp op,
                         double prescale, double postscale) = 0;
  // One fused reducescatter: tensor i's input holds blocks[i][r] elements for each rank r, in
  // rank order; its output gets this rank's (`rank`) blocks[i][rank], reduced over the ranks.
  // Packed rank-major (rank r's blocks of every tensor together, each rank's share padded to
  // the largest), prescaled, one reduce-scatter, postscaled, unpacked, all enqueued. Every rank
  // has every tensor (no rank has joined: the engine refuses a reducescatter then).
  virtual void reducescatter(std::span<const DeviceTensor> tensors,
                             std::span<const std::vector<std::size_t>> blocks, int rank,
                             DataType type, ReduceOp op, double prescale, double postscale) = 0;
  // In place on t.output (t.input copied there first); a joined rank passes no buffers.
  virtual void broadcast(const DeviceTensor& t, DataType type, int root) = 0;
  // A grouped allgather: tensor i gives counts[i][r] elements from rank r (its input holds
  // counts[i][rank]; null on a rank that gives none). The result in one device buffer, tensor
  // by tensor, each in rank order (GatherLayout). One tensor: straight into the result; more:
  // packed, one allgather, unpacked (a batched copy per rank), all enqueued.
  virtual std::shared_ptr<void> allgatherv(std::span<const DeviceTensor> tensors,
                                           std::span<const std::vector<std::size_t>> counts,
                                           int rank, DataType type) = 0;

  // send[r] elements of t.input to rank r, recv[r] from rank r; the result (in rank order) in a
  // device buffer of the sum of recv, as allgatherv's.
  virtual std::shared_ptr<void> alltoallv(const DeviceTensor& t, std::span<const std::size_t> send,
                                          std::span<const std::size_t> recv, DataType type) = 0;

  // The point after everything enqueued so far (null: all of it is complete already).
  virtual std::shared_ptr<DeviceEvent> done_marker() = 0;
  // `done` runs on the watcher thread once the device passed `marker` (or at once when it is
  // null), or with the error when the work failed or timed out.
  virtual void when_done(std::shared_ptr<DeviceEvent> marker, Completion done) = 0;
  // Throws the failure the watcher saw (a peer's NCCL error, a timeout), on the engine thread:
  // the engine then stops, naming it.
  virtual void throw_if_failed() = 0;
  // The engine stopped after a failure: the work in flight fails with `why` (NCCL is aborted,
  // its results are garbage), instead of waiting out the timeout at teardown.
  virtual void abandon(const CollectiveError& why) = 0;
  // How to copy `bytes` of a result of this path (allgatherv, alltoallv) to `dst` on `stream`, ordered
  // after `after`. Returns once the copy is enqueued: the result's memory is released only
  // after it (the result's owner keeps track). Usable after the path is gone (a handle may
  // outlive the engine).
  using ResultCopier = void (*)(void* dst, const std::shared_ptr<void>& src, std::size_t bytes,
                                void* stream, const DeviceEvent* after);
  virtual ResultCopier result_copier() const = 0;
};

// Where reducescatter's packed buffer puts things: rank r's share starts at r * share elements;
// tensor i's block for rank r lies at offset[i][r] within it (and, unpacked, at offset[i][rank]
// of the received share). used[r]: rank r's share before padding; `padded`: some share is
// shorter than `share`.
struct ScatterLayout {
  std::size_t share = 0;
  bool padded = false;
  std::vector<std::vector<std::size_t>> offset;
  std::vector<std::size_t> used;
  static ScatterLayout of(std::span<const std::vector<std::size_t>> blocks) {
    ScatterLayout l;
    const std::size_t ranks = blocks.empty() ? 0 : blocks.front().size();
    l.used.assign(ranks, 0);
    for (const auto& b : blocks) {
      l.offset.emplace_back(ranks);
      for (std::size_t r = 0; r < ranks; ++r) {
        l.offset.back()[r] = l.used[r];
        l.used[r] += b[r];
      }
    }
    for (std::size_t u : l.used) l.share = std::max(l.share, u);
    for (std::size_t u : l.used) l.padded = l.padded || u != l.share;
    return l;
  }
};

// Where a grouped allgather puts things (counts[i][r] elements of tensor i from rank r): rank
// r's pieces of every tensor lie end to end as in a reducescatter's share (shares.offset[i][r]
// within it), but unpadded, so the gathered buffer holds rank r's share (shares.used[r]) at
// share_start[r]; tensor i's piece from rank r lies, in the result (tensor by tensor, each in
// rank order), at result[i][r].
struct GatherLayout {
  ScatterLayout shares;
  std::vector<std::size_t> share_start;
  std::vector<std::vector<std::size_t>> result;
  std::size_t total = 0;
  static GatherLayout of(std::span<const std::vector<std::size_t>> counts) {
    GatherLayout l;
    l.shares = ScatterLayout::of(counts);
    for (std::size_t used : l.shares.used) {
      l.share_start.push_back(l.total);
      l.total += used;
    }
    std::size_t at = 0;
    for (const auto& c : counts) {
      l.result.emplace_back();
      for (std::size_t n : c) {
        l.result.back().push_back(at);
        at += n;
      }
    }
    return l;
  }
};

// The stand-in of device_path_host.cpp (in every build).
std::unique_ptr<DevicePath> make_host_standin_path(Communicator& cpu);

}  // namespace riseml::engine
