// Collectives on device buffers for every rank of a riseml::Communicator, in one of two modes:
//   flat:         one NCCL communicator over all ranks (NCCL picks its own network).
//   hierarchical: NCCL inside each host (reduce-scatter, then allgather), and between hosts the
//                 CPU allreduce of riseml::Communicator among the ranks with the same local
//                 index, each carrying 1/L of the data: for clusters where NCCL's network plugin
//                 is unavailable or slower than our TCP.
// The NCCL unique ids travel over the CPU communicator, so no rendezvous is needed after it.
// Every call runs after the work already on `stream`, and the work queued on `stream` after it
// runs after the result is in place. Flat: a call returns once enqueued (stream-ordered; the
// caller watches for failures with healthy() and abort()). Hierarchical: the CPU step between
// hosts waits for the device (bounded by the timeout; a dead peer aborts the NCCL
// communicators and throws CollectiveError).
// Only in a build with CUDA (RISEML_HAVE_CUDA).
#pragma once

#include <riseml/communicator.hpp>
#include <riseml/cuda/gpu_options.hpp>
#include <riseml/cuda/nccl_communicator.hpp>

#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace riseml::cuda {

// How the hierarchical allreduce cuts `count` elements over `local_size` ranks of a host: the
// first local_size * shard elements are reduce-scattered (rank i of the host owns shard i);
// the remaining (< local_size) elements are allreduced inside the host as a whole.
struct HierarchicalSplit {
  std::size_t shard = 0;      // elements per local rank
  std::size_t remainder = 0;  // elements after local_size * shard
  static HierarchicalSplit of(std::size_t count, int local_size) {
    const auto l = static_cast<std::size_t>(local_size);
    return {count / l, count % l};
  }
};

class GpuCollectives {
 public:
  // Collective over every rank of `cpu`, which must outlive this object (the hierarchical mode
  // uses it for the cross-host step). Throws CollectiveError naming rank, host and device.
  GpuCollectives(Communicator& cpu, const GpuOptions& options);
  ~GpuCollectives();
  GpuCollectives(const GpuCollectives&) = delete;
  GpuCollectives& operator=(const GpuCollectives&) = delete;

  int device() const;

  // In place on `count` elements at `buffer`. Average: the sum divided by the number of ranks
  // (integers: truncating), as the CPU communicator.
  void allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op, cudaStream_t stream);
  void broadcast(void* buffer, std::size_t count, DataType type, int root, cudaStream_t stream);
  // Reduces size() * count elements of `in` over all ranks; rank r receives block r in `out`
  // (count elements; not overlapping `in`). Average as allreduce's. Hierarchical: an allreduce
  // of a device copy of `in`, then this rank's block (NCCL inside the host cannot reduce-scatter
  // across hosts by itself).
  void reduce_scatter(const void* in, void* out, std::size_t count, DataType type, ReduceOp op,
                      cudaStream_t stream);
  // out = in of rank 0 (counts[0] elements), in of rank 1, ...
  void allgatherv(const void* in, void* out, std::span<const std::size_t> counts, DataType type,
                  cudaStream_t stream);

  // `in` holds send_counts[r] elements for rank r, in rank order; `out` receives recv_counts[r]
  // from rank r (not overlapping `in`). Flat: NCCL sends and receives; hierarchical: through
  // host memory and the CPU communicator (NCCL may not reach across hosts).
  void alltoallv(const void* in, std::span<const std::size_t> send_counts, void* out,
                 std::span<const std::size_t> recv_counts, DataType type, cudaStream_t stream);

  // Point to point (NcclCommunicator::exchange), flat mode only: hierarchical mode has no NCCL
  // communicator across hosts (CollectiveError(invalid_argument), naming the fix).
  void exchange(std::span<const PeerSend> sends, std::span<const PeerReceive> receives,
                cudaStream_t stream);

  // NcclCommunicator::healthy / abort of this rank's communicator.
  bool healthy(std::string* why) const;
  void abort(const std::string& reason);
  void request_abort();  // NcclCommunicator::request_abort: from any thread

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace riseml::cuda
