// An NCCL communicator over the ranks of a rendezvous: rank 0 makes the ncclUniqueId and shares
// it with put/fence/get. One CUDA device per rank (NCCL refuses two ranks on one device).
//
// Every collective is enqueued on the communicator's own stream, ordered after the work already
// on the caller's stream (an event), and the caller's stream is ordered after the collective (a
// second event): the call returns once enqueued; synchronize() waits on the host.
// The communicator is non-blocking (ncclConfig_t::blocking = 0): setup and synchronize() poll
// ncclCommGetAsyncError and give up after the timeout with ncclCommAbort, so a dead peer gives
// a CollectiveError (timeout or peer_failed) instead of a hang. After an error every call
// throws ErrorKind::aborted.
// Only in a build with CUDA (RISEML_HAVE_CUDA); see status.hpp otherwise.
#pragma once

#include <riseml/collective_error.hpp>
#include <riseml/datatype.hpp>
#include <riseml/peer_transfer.hpp>
#include <riseml/rendezvous.hpp>

#include <cuda_runtime.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace riseml::cuda {

struct NcclOptions {
  // Setup and synchronize() wait at most this long for the peers.
  std::chrono::milliseconds timeout = std::chrono::seconds(60);
  // The CUDA device of this rank; -1: the calling thread's current device.
  int device = -1;
  // The rendezvous key of the unique id starts with this; distinct per concurrent setup.
  std::string rendezvous_prefix = "riseml.nccl";
  // Collectives run on the caller's stream itself (no own stream, no events between the two):
  // for a caller that orders and watches its stream itself (the engine's GPU path, with
  // healthy() and abort()); synchronize() then waits for nothing of theirs.
  bool on_caller_stream = false;
};

// "NCCL_DEBUG=INFO NCCL_IB_HCA==mlx5_0:1" or "no NCCL_* variables set": for error messages.
std::string nccl_environment();

// The bytes of an ncclUniqueId: made by one rank, shared with the others by any means.
using NcclId = std::array<std::byte, 128>;
// Throws CollectiveError(setup) naming the host when NCCL cannot make one.
NcclId make_nccl_id();

class NcclCommunicator {
 public:
  // Collective over the rendezvous' ranks. Throws CollectiveError (setup / timeout) naming the
  // rank, host, device and the NCCL_* variables in effect.
  NcclCommunicator(Rendezvous& rendezvous, const NcclOptions& options = {});
  // Collective over `size` ranks that share `id` (made by make_nccl_id on one of them).
  NcclCommunicator(const NcclId& id, int rank, int size, const NcclOptions& options = {});
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const;
  int size() const;
  int device() const;
  cudaStream_t stream() const;

  // Device buffers. in == out allowed for allreduce and broadcast. Average is NCCL's ncclAvg
  // (integers: not supported, use sum and divide).
  void allreduce(const void* in, void* out, std::size_t count, DataType type, ReduceOp op,
                 cudaStream_t caller);
  void broadcast(void* buffer, std::size_t count, DataType type, int root, cudaStream_t caller);
  // out = in of rank 0, in of rank 1, ...; count elements each.
  void allgather(const void* in, void* out, std::size_t count, DataType type,
                 cudaStream_t caller);

  // Reduces size()*count elements of `in` over all ranks; rank r receives block r in `out`
  // (out may be in + rank*count: in place).
  void reduce_scatter(const void* in, void* out, std::size_t count, DataType type, ReduceOp op,
                      cudaStream_t caller);
  // out = in of rank 0 (counts[0] elements), in of rank 1, ... One NCCL group of broadcasts,
  // since NCCL has no allgatherv. counts must agree on all ranks.
  void allgatherv(const void* in, void* out, std::span<const std::size_t> counts, DataType type,
                  cudaStream_t caller);

  // All-to-all: `in` holds send_counts[r] elements for each rank r, in rank order; `out`
  // receives recv_counts[r] elements from each rank r, in rank order (one NCCL group of sends
  // and receives; recv_counts[r] here must equal send_counts[this rank] on rank r).
  void alltoallv(const void* in, std::span<const std::size_t> send_counts, void* out,
                 std::span<const std::size_t> recv_counts, DataType type, cudaStream_t caller);

  // Point to point: every send and receive of the batch in one NCCL group (bytes; a peer's
  // sends match its receives from this rank in order, as NCCL pairs them).
  void exchange(std::span<const PeerSend> sends, std::span<const PeerReceive> receives,
                cudaStream_t caller);

  // The caller's stream waits for everything enqueued on this communicator's stream so far (a
  // copy queued there after the last collective, too). Nothing with on_caller_stream.
  void order_caller_after(cudaStream_t caller);

  // Waits until everything enqueued so far has completed, at most the timeout; on a timeout or
  // an NCCL error aborts the communicator and throws.
  void synchronize();

  // For a watchdog that does not wait (the engine's GPU path): false, with the reason in `why`,
  // when NCCL reports an asynchronous error (a peer failed) or the communicator failed before.
  bool healthy(std::string* why) const;
  // Aborts the communicator: NCCL's kernels in flight end (their results are garbage) and every
  // later call throws ErrorKind::aborted with `reason`. From the thread that makes the calls (or
  // with them excluded otherwise).
  void abort(const std::string& reason);
  // From any thread: a wait of the calling thread (set-up, an enqueue, synchronize) ends at its
  // next poll by aborting and throwing ErrorKind::aborted, and so does the next call; for a
  // watchdog that must not wait for the lock its owner holds while it waits.
  void request_abort();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace riseml::cuda
