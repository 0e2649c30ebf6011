#include <riseml/cuda/gpu_collectives.hpp>
#include <riseml/cuda/kernels.hpp>

#include "host_name.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace riseml::cuda {

struct GpuCollectives::State {
  Communicator& cpu;
  GpuOptions options;
  HostLayout layout;
  std::unique_ptr<NcclCommunicator> nccl;  // all ranks (flat) or this host's (hierarchical)
  void* pinned = nullptr;                  // host staging for the CPU steps
  std::size_t pinned_bytes = 0;

  explicit State(Communicator& c) : cpu(c) {}

  std::string where() const {
    return "rank " + std::to_string(cpu.rank()) + " (host " + host_name() + ", CUDA device " +
           std::to_string(options.device) + ")";
  }

  void check(cudaError_t e, const char* what) const {
    if (e != cudaSuccess)
      throw CollectiveError(ErrorKind::system, std::string("riseml gpu: ") + what + ": " +
                                                   cudaGetErrorString(e) + " on " + where());
  }

  std::byte* staging(std::size_t bytes) {
    if (bytes > pinned_bytes) {
      nccl->synchronize();  // a copy from the old buffer may still be queued
      if (pinned) cudaFreeHost(pinned);
      pinned = nullptr;
      pinned_bytes = 0;
      check(cudaMallocHost(&pinned, bytes), "cudaMallocHost");
      pinned_bytes = bytes;
    }
    return static_cast<std::byte*>(pinned);
  }

  // Device -> host, the CPU collective, host -> device, all after the work on the NCCL stream.
  template <class CpuStep>
  void through_host(void* device_buffer, std::size_t bytes, CpuStep&& step) {
    if (bytes == 0) {
      step(nullptr);
      return;
    }
    std::byte* host = staging(bytes);
    check(cudaMemcpyAsync(host, device_buffer, bytes, cudaMemcpyDeviceToHost, nccl->stream()),
          "cudaMemcpyAsync (to host)");
    nccl->synchronize();
    step(host);
    check(cudaMemcpyAsync(device_buffer, host, bytes, cudaMemcpyHostToDevice, nccl->stream()),
          "cudaMemcpyAsync (to device)");
  }
};

GpuCollectives::GpuCollectives(Communicator& cpu, const GpuOptions& options)
    : state_(std::make_unique<State>(cpu)) {
  State& s = *state_;
  s.options = options;
  if (s.options.device < 0) s.check(cudaGetDevice(&s.options.device), "cudaGetDevice");
  s.check(cudaSetDevice(s.options.device), "cudaSetDevice");
  s.layout = cpu.host_layout();
  if (s.options.algorithm == GpuAlgorithm::hierarchical && !s.layout.uniform)
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml gpu: RISEML_GPU_ALGORITHM=hierarchical needs the same number "
                          "of ranks on every host, but " + s.where() + " has " +
                              std::to_string(s.layout.local_ranks.size()) +
                              " on its host and others differ; start the same number of tasks "
                              "per node or use RISEML_GPU_ALGORITHM=nccl");

  NcclOptions nccl_options;
  nccl_options.device = s.options.device;
  nccl_options.timeout = s.options.timeout;
  // Flat: NCCL runs on the caller's stream (stream-ordered, no event pair per call); the
  // hierarchical steps need the NCCL stream of their own for the copies through the host.
  nccl_options.on_caller_stream = s.options.algorithm == GpuAlgorithm::flat;
  // Every rank offers an id; each rank takes that of its communicator's first rank (rank 0 for
  // flat, the host's first rank for hierarchical): one allgather serves both modes.
  const bool hierarchical = s.options.algorithm == GpuAlgorithm::hierarchical;
  const int leader = hierarchical ? s.layout.local_ranks.front() : 0;
  // Byte 0 says whether the id is good, so a leader that cannot make one does not leave the
  // others waiting for the CPU timeout.
  constexpr std::size_t kSlot = 1 + sizeof(NcclId);
  std::array<std::byte, kSlot> mine{};
  std::string leader_error;
  if (cpu.rank() == leader) {
    try {
      const NcclId id = make_nccl_id();
      mine[0] = std::byte{1};
      std::memcpy(mine.data() + 1, id.data(), id.size());
    } catch (const CollectiveError& e) {
      leader_error = e.what();
    }
  }
  std::vector<std::byte> all(kSlot * static_cast<std::size_t>(cpu.size()));
  cpu.allgather(mine.data(), all.data(), kSlot, DataType::uint8);
  if (!leader_error.empty()) throw CollectiveError(ErrorKind::setup, leader_error);
  const std::byte* slot = all.data() + static_cast<std::size_t>(leader) * kSlot;
  if (slot[0] != std::byte{1})
    throw CollectiveError(ErrorKind::setup,
                          "riseml gpu: rank " + std::to_string(leader) +
                              " could not make the NCCL unique id (its own error says why); "
                              "on " + s.where(),
                          leader);
  NcclId id;
  std::memcpy(id.data(), slot + 1, id.size());
  if (hierarchical)
    s.nccl = std::make_unique<NcclCommunicator>(
        id, s.layout.local_index, static_cast<int>(s.layout.local_ranks.size()), nccl_options);
  else
    s.nccl = std::make_unique<NcclCommunicator>(id, cpu.rank(), cpu.size(), nccl_options);
}

GpuCollectives::~GpuCollectives() {
  State& s = *state_;
  s.nccl.reset();
  if (s.pinned) cudaFreeHost(s.pinned);
}

int GpuCollectives::device() const { return state_->options.device; }

void GpuCollectives::allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op,
                               cudaStream_t stream) {
  State& s = *state_;
  const ReduceOp reduce = op == ReduceOp::average ? ReduceOp::sum : op;
  s.check(cudaSetDevice(s.options.device), "cudaSetDevice");
  NcclCommunicator& nccl = *s.nccl;
  if (s.options.algorithm == GpuAlgorithm::flat) {
    nccl.allreduce(buffer, buffer, count, type, reduce, stream);
  } else {
    const std::size_t esize = element_size(type);
    const int local_size = static_cast<int>(s.layout.local_ranks.size());
    const HierarchicalSplit split = HierarchicalSplit::of(count, local_size);
    auto* base = static_cast<std::byte*>(buffer);
    std::byte* mine = base + static_cast<std::size_t>(s.layout.local_index) * split.shard * esize;
    std::byte* tail = base + static_cast<std::size_t>(local_size) * split.shard * esize;
    // 1. Inside the host: local rank i ends with shard i summed over the host.
    if (split.shard) nccl.reduce_scatter(base, mine, split.shard, type, reduce, stream);
    if (split.remainder) nccl.allreduce(tail, tail, split.remainder, type, reduce, stream);
    // 2. Across hosts, on the CPU: each column of local ranks reduces its shard (every rank the
    // remainder). Every rank makes both calls, so the CPU communicator stays in step.
    s.through_host(mine, split.shard * esize, [&](std::byte* host) {
      s.cpu.cross_host_allreduce(host, host, split.shard, type, reduce);
    });
    s.through_host(tail, split.remainder * esize, [&](std::byte* host) {
      s.cpu.cross_host_allreduce(host, host, split.remainder, type, reduce);
    });
    // 3. Inside the host again: every local rank gets every shard (on `stream`'s order: the
    // copy back from the host above is on the NCCL stream before it).
    if (split.shard) nccl.allgather(mine, base, split.shard, type, stream);
    // The remainder's copy back is on the NCCL stream too: without shards (fewer elements than
    // ranks on the host: a loss, a metric) no allgather orders `stream` after it, and the
    // division below or the caller's next kernel would read the host's sum.
    nccl.order_caller_after(stream);
  }
  // After the collective on `stream` (NcclCommunicator orders the caller's stream after it).
  if (op == ReduceOp::average && s.cpu.size() > 1) divide(type, buffer, count, s.cpu.size(), stream);
}

void GpuCollectives::reduce_scatter(const void* in, void* out, std::size_t count, DataType type,
                                    ReduceOp op, cudaStream_t stream) {
  State& s = *state_;
  if (count == 0) return;
  s.check(cudaSetDevice(s.options.device), "cudaSetDevice");
  const std::size_t bytes = count * element_size(type);
  if (s.options.algorithm == GpuAlgorithm::flat) {
    const ReduceOp reduce = op == ReduceOp::average ? ReduceOp::sum : op;
    s.nccl->reduce_scatter(in, out, count, type, reduce, stream);
    if (op == ReduceOp::average && s.cpu.size() > 1) divide(type, out, count, s.cpu.size(), stream);
    return;
  }
  // Stream-ordered scratch: freed on `stream` after the copy out, no device-wide sync.
  const std::size_t all = bytes * static_cast<std::size_t>(s.cpu.size());
  void* scratch = nullptr;
  s.check(cudaMallocAsync(&scratch, all, stream), "cudaMallocAsync");
  s.check(cudaMemcpyAsync(scratch, in, all, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
  try {
    allreduce(scratch, count * static_cast<std::size_t>(s.cpu.size()), type, op, stream);
  } catch (...) {
    cudaFreeAsync(scratch, stream);
    throw;
  }
  s.check(cudaMemcpyAsync(out, static_cast<const std::byte*>(scratch) +
                                   static_cast<std::size_t>(s.cpu.rank()) * bytes,
                          bytes, cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpyAsync");
  s.check(cudaFreeAsync(scratch, stream), "cudaFreeAsync");
}

void GpuCollectives::broadcast(void* buffer, std::size_t count, DataType type, int root,
                               cudaStream_t stream) {
  State& s = *state_;
  s.check(cudaSetDevice(s.options.device), "cudaSetDevice");
  if (s.options.algorithm == GpuAlgorithm::flat) {
    s.nccl->broadcast(buffer, count, type, root, stream);
  } else {  // NCCL may not reach across hosts: through the CPU (rare: parameters at start)
    s.check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    s.through_host(buffer, count * element_size(type),
                   [&](std::byte* host) { s.cpu.broadcast(host, count, type, root); });
    s.nccl->synchronize();  // the copy back is on the NCCL stream, not on `stream`
  }
}

void GpuCollectives::allgatherv(const void* in, void* out, std::span<const std::size_t> counts,
                                DataType type, cudaStream_t stream) {
  State& s = *state_;
  s.check(cudaSetDevice(s.options.device), "cudaSetDevice");
  if (counts.size() != static_cast<std::size_t>(s.cpu.size()))
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml gpu: allgatherv needs one count per rank on " + s.where());
  const bool equal = std::all_of(counts.begin(), counts.end(),
                                 [&](std::size_t c) { return c == counts.front(); });
  if (s.options.algorithm == GpuAlgorithm::flat && equal) {
    s.nccl->allgather(in, out, counts.front(), type, stream);
  } else if (s.options.algorithm == GpuAlgorithm::flat) {
    s.nccl->allgatherv(in, out, counts, type, stream);
  } else {
    const std::size_t esize = element_size(type);
    std::size_t total = 0, before = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      if (static_cast<int>(r) < s.cpu.rank()) before += counts[r];
      total += counts[r];
    }
    const std::size_t mine = counts[static_cast<std::size_t>(s.cpu.rank())];
    // Own rows into place, then the CPU allgatherv in place over the whole output.
    s.check(cudaMemcpyAsync(static_cast<std::byte*>(out) + before * esize, in, mine * esize,
                            cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpyAsync");
    s.check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    s.through_host(out, total * esize, [&](std::byte* host) {
      std::vector<std::byte> rows(host + before * esize, host + (before + mine) * esize);
      s.cpu.allgatherv(rows.data(), host, counts, type);
    });
    s.nccl->synchronize();  // the copy back is on the NCCL stream, not on `stream`
  }
}

void GpuCollectives::alltoallv(const void* in, std::span<const std::size_t> send_counts,
                               void* out, std::span<const std::size_t> recv_counts,
                               DataType type, cudaStream_t stream) {
  State& s = *state_;
  s.check(cudaSetDevice(s.options.device), "cudaSetDevice");
  if (send_counts.size() != static_cast<std::size_t>(s.cpu.size()) ||
      recv_counts.size() != static_cast<std::size_t>(s.cpu.size()))
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml gpu: alltoallv needs one send and one receive count per rank "
                          "on " + s.where());
  if (s.options.algorithm == GpuAlgorithm::flat) {
    s.nccl->alltoallv(in, send_counts, out, recv_counts, type, stream);
    return;
  }
  const std::size_t esize = element_size(type);
  std::size_t sent = 0, received = 0;
  for (std::size_t c : send_counts) sent += c;
  for (std::size_t c : recv_counts) received += c;
  // Both directions through one staging buffer: the inputs, then the results.
  s.check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::byte* host = s.staging(std::max<std::size_t>((sent + received) * esize, 1));
  if (sent)
    s.check(cudaMemcpyAsync(host, in, sent * esize, cudaMemcpyDeviceToHost, s.nccl->stream()),
            "cudaMemcpyAsync (to host)");
  s.nccl->synchronize();
  s.cpu.alltoallv(host, send_counts, host + sent * esize, recv_counts, type);
  if (received)
    s.check(cudaMemcpyAsync(out, host + sent * esize, received * esize, cudaMemcpyHostToDevice,
                            s.nccl->stream()),
            "cudaMemcpyAsync (to device)");
  s.nccl->synchronize();  // the copy back is on the NCCL stream, not on `stream`
}

void GpuCollectives::exchange(std::span<const PeerSend> sends,
                              std::span<const PeerReceive> receives, cudaStream_t stream) {
  State& s = *state_;
  if (s.options.algorithm != GpuAlgorithm::flat)
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml gpu: send and receive of device buffers need the flat GPU mode "
                          "(one NCCL communicator over all ranks), and this job runs the "
                          "hierarchical one (RISEML_GPU_ALGORITHM or HOROVOD_HIERARCHICAL_ALLREDUCE) "
                          "on " + s.where() + "; unset it for jobs that send point to point");
  s.check(cudaSetDevice(s.options.device), "cudaSetDevice");
  s.nccl->exchange(sends, receives, stream);
}

bool GpuCollectives::healthy(std::string* why) const { return state_->nccl->healthy(why); }

void GpuCollectives::abort(const std::string& reason) { state_->nccl->abort(reason); }

void GpuCollectives::request_abort() { state_->nccl->request_abort(); }

}  // namespace riseml::cuda
