// The engine: a background thread per process that takes named tensors from any thread, agrees
// with the other ranks which of them are ready everywhere, packs ready allreduces of one kind
// into a fusion buffer and runs the collectives on a riseml::Communicator (the way Horovod's
// horovod/common works). Every call returns a Handle; errors reach it as riseml::CollectiveError.
#pragma once

#include <riseml/communicator.hpp>
#include <riseml/engine/engine_options.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace riseml::engine {

enum class OpKind : std::uint8_t {
  allreduce, broadcast, allgather, barrier, join, reducescatter, alltoall
};

// The rows of a reducescatter's first dimension that `rank` of `size` receives: the rows are
// dealt in rank order, the first rows % size ranks getting one more (Horovod's split).
std::int64_t reducescatter_rows(std::int64_t rows, int size, int rank);

// One tensor of a request. `input` may equal `output` (in place). allgather and alltoall:
// `output` is unused (the engine allocates the results, see Handle::output). reducescatter:
// `output` holds reducescatter_rows(...) rows of this rank. barrier/join: no tensors.
struct TensorArg {
  const void* input = nullptr;
  void* output = nullptr;
  std::vector<std::int64_t> shape;
  // -1: host memory. >= 0: memory of this CUDA device, reduced there with NCCL (a build with
  // GPU support only: riseml::cuda::built_with_cuda(); otherwise enqueue says so).
  int device = -1;
};

struct Request {
  OpKind kind = OpKind::allreduce;
  // Unique among the requests in flight on this rank; the same on every rank. Empty for barrier
  // and join (the engine names them).
  std::string name;
  DataType dtype = DataType::float32;
  ReduceOp op = ReduceOp::sum;  // allreduce, reducescatter
  // allreduce: adaptive summation (Horovod's op=Adasum) instead of `op`; floating point only.
  bool adasum = false;
  // allreduce, reducescatter: input * prescale, result * postscale (integers: computed in
  // double and truncated toward zero, as Horovod does).
  double prescale = 1.0;
  double postscale = 1.0;
  int root = 0;                 // broadcast
  // alltoall: rows of the first dimension sent to each rank, in rank order (size() entries
  // summing to the first dimension); empty: an equal split (the first dimension must divide).
  std::vector<std::int64_t> splits;
  // allreduce, allgather, reducescatter: one or more (a grouped operation is ready, and
  // completes, as one); broadcast and alltoall: exactly one.
  std::vector<TensorArg> tensors;
  // Device tensors: the cudaStream_t the caller (the framework) wrote them on; the engine's work
  // is ordered after what that stream holds at enqueue() (an event). nullptr: the legacy
  // default stream. The result is complete on the device when the handle completes.
  void* stream = nullptr;
};

struct HandleState;

// Shared between the caller and the engine; copyable.
class Handle {
 public:
  Handle() = default;
  explicit Handle(std::shared_ptr<HandleState> state) : state_(std::move(state)) {}

  bool valid() const { return state_ != nullptr; }
  // True once the operation completed (successfully or not). Never blocks.
  bool poll() const;
  // Blocks until the operation completed; throws its CollectiveError if it failed.
  void wait() const;
  // Device tensors: returns once the work is queued on the GPU and the stream the request named
  // (Request::stream) is ordered after it, without waiting for the device (as torch's nccl
  // backend makes the current stream wait); throws the error if it failed by then. A failure
  // seen later (a peer's, a timeout) fails the engine's next operation on every rank. Host
  // tensors: wait().
  void wait_stream_ordered() const;

  // allgather: the gathered bytes and their shape (first dimension summed over ranks). For
  // device tensors the bytes stay on the device: allgather_output() is empty, and
  // copy_allgather_output(dst, stream) copies them (every output's, end to end) to `dst` on the
  // same device, on `stream` (the cudaStream_t that allocated dst; nullptr: the legacy default
  // stream), after the collective; it returns once the copy is enqueued. Host results: a memcpy.
  const std::vector<std::byte>& allgather_output() const;
  void copy_allgather_output(void* dst, void* stream = nullptr) const;
  std::size_t allgather_output_bytes() const;
  // The same per output of a device result (a grouped allgather's one per tensor): output i to
  // dsts[i] (null: not copied). Throws invalid_argument unless there is one per output.
  void copy_device_outputs(std::span<void* const> dsts, void* stream = nullptr) const;
  const std::vector<std::int64_t>& output_shape() const;
  // allgather (one result per tensor of the request) and alltoall (one): the engine's result
  // buffers in host memory and their shapes (device results: the shapes, output() empty).
  std::size_t output_count() const;
  const std::vector<std::byte>& output(std::size_t i) const;
  const std::vector<std::int64_t>& output_shape(std::size_t i) const;
  // alltoall: the rows received from each rank.
  const std::vector<std::int64_t>& received_splits() const;
  // join: the last rank that joined.
  int join_result() const;

 private:
  std::shared_ptr<HandleState> state_;
};

class EngineLoop;

class Engine {
 public:
  // Collective: builds the communicator on the calling thread, then starts the engine thread.
  Engine(Rendezvous& rendezvous, const CommunicatorOptions& communicator_options,
         const EngineOptions& options);
  // Shuts down (see shutdown()) and joins the engine thread.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  int rank() const;
  int size() const;

  // Thread-safe. Throws CollectiveError(invalid_argument) for a malformed request or a name
  // already in flight, CollectiveError(aborted) once the engine has failed or shut down.
  Handle enqueue(Request request);

  // Convenience wrappers around enqueue(), for host tensors (GPU tensors: enqueue a Request
  // whose TensorArg::device names the CUDA device).
  Handle allreduce(std::string name, const void* input, void* output,
                   std::vector<std::int64_t> shape, DataType dtype, ReduceOp op,
                   double prescale = 1.0, double postscale = 1.0);
  Handle broadcast(std::string name, void* buffer, std::vector<std::int64_t> shape,
                   DataType dtype, int root);
  Handle allgather(std::string name, const void* input, std::vector<std::int64_t> shape,
                   DataType dtype);
  Handle barrier();
  // This rank has no more tensors: until every rank has joined, other ranks' allreduces go on
  // with zeros from this rank; a broadcast, allgather, reducescatter or alltoall fails on every
  // rank that submitted it (as in Horovod). Completes when all ranks have joined;
  // Handle::join_result() is the last rank that joined.
  Handle join();

  // Stops the engine on every rank at the next cycle (any rank may call it): requests still
  // pending fail with ErrorKind::aborted. Idempotent; blocks until the engine thread ended.
  // `leaving`: this process is on its way out (it exits): the others' engines count it as a
  // failure that this rank caused (failed(), failed_rank()), so elastic training goes on without
  // it; a plain shutdown (every rank re-forming the world) is no failure.
  void shutdown(bool leaving = false);

  // Starts writing the timeline to `path` (rank 0 writes it; other ranks ignore the call), or
  // stops it and closes the file; either takes effect at the engine's next cycle, and a
  // running timeline is closed first. Throws CollectiveError(system) when the file cannot be
  // created.
  void start_timeline(const std::string& path);
  void stop_timeline();

  // Set once the engine failed (a collective failed on every rank) or shut down.
  bool stopped() const;
  // The rank its failure blamed (a dead or silent peer), or the rank whose shutdown() stopped
  // it (failed() is false then); -1 when it did not stop, or no rank was to blame. Elastic
  // training leaves that rank out when it re-forms the world.
  int failed_rank() const;
  // Stopped because a collective failed (whether or not a rank was blamed), not by shutdown().
  bool failed() const;

 private:
  std::unique_ptr<EngineLoop> loop_;
};

}  // namespace riseml::engine
