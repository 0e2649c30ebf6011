// The public C++ API: argument checks, algorithm choice, float16/bfloat16 widening, average,
// and turning any failure into a CollectiveError that also fails the communicator (telling the
// peers why, so their errors name the original cause).
#include <riseml/communicator.hpp>
#include <riseml/reduce_kernels.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "../algorithms/algorithms.hpp"
#include "../core/context.hpp"
#include "../transport/exchange.hpp"

namespace riseml {

namespace {

// float16/bfloat16 allreduces go through float32 in pieces of this many elements, so the
// widened copy (a fixed 4 MiB scratch) never grows with the message.
constexpr std::size_t kWidePieceElements = 1 << 20;

void require(bool ok, const char* what) {
  if (!ok) throw CollectiveError(ErrorKind::invalid_argument, what);
}

// bool reduces by or (sum, max) and and (product, min); an average of truth values means
// nothing, so it is refused rather than guessed.
void require_reducible(const Context& c, DataType type, ReduceOp op, const char* call) {
  if (type == DataType::boolean && op == ReduceOp::average)
    throw CollectiveError(ErrorKind::invalid_argument,
                          "rank " + std::to_string(c.rank()) + ": " + call +
                              ": average is not defined for bool (sum/max give any, "
                              "product/min all)");
}

// Whether two buffers share a byte.
bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return false;
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

std::size_t sum(std::span<const std::size_t> counts) {
  std::size_t total = 0;
  for (std::size_t k : counts) total += k;
  return total;
}

template <class F>
void run_collective(Context& c, F&& body) {
  c.throw_if_failed();
  c.start_call();
  try {
    body();
  } catch (const CollectiveError& e) {
    // A peer that closed its connection may have died or given up on another: a verdict that
    // already arrived names the original culprit (the peer's abort frame can be lost with it).
    if (e.kind() == ErrorKind::peer_failed)
      if (WaitsFor* w = c.waits_for())
        if (auto v = w->verdict_now(); v && v->culprit != e.culprit_rank()) {
          CollectiveError original(ErrorKind::peer_failed, v->message, v->culprit);
          c.fail(original);
          throw original;
        }
    if (e.kind() != ErrorKind::invalid_argument) c.fail(e);
    throw;
  } catch (const std::bad_alloc&) {
    CollectiveError e(ErrorKind::system, "rank " + std::to_string(c.rank()) + ": out of memory");
    c.fail(e);
    throw e;
  }
}

}  // namespace

Communicator::Communicator(Rendezvous& rendezvous, const CommunicatorOptions& options)
    : context_(std::make_unique<Context>(rendezvous, options)) {}

Communicator::~Communicator() = default;

void Communicator::stand_by(Rendezvous& rendezvous, const CommunicatorOptions& options) {
  Context::stand_by(rendezvous, options);
}

int Communicator::rank() const { return context_->rank(); }
int Communicator::size() const { return context_->size(); }
std::string Communicator::describe_transports() const { return context_->describe_transports(); }

std::string Communicator::describe_placement() const { return context_->describe_placement(); }

void Communicator::wait_for_peers(std::chrono::microseconds timeout,
                                  const std::function<bool()>& has_local_work,
                                  std::mutex* links_guard) {
  context_->wait_for_peers(timeout, has_local_work, links_guard);
}

void Communicator::interrupt_wait() noexcept { context_->interrupt_wait(); }

namespace {

// At most this many peers take the direct step: beyond it a rank's sends outlast the rounds
// they save.
constexpr int kMostDirectPeers = 15;

// The one-step (direct) form of a collective of 2 to 16 ranks, where every rank sends
// `bytes_per_peer` to each other rank and all of it is at most RISEML_DIRECT_BYTES. It pays over
// shared memory and over TCP alike: one round of latency instead of several (measured:
// docs/performance.md, "Small messages").
// With one peer the direct step moves no more bytes than the ring (half out and half back
// twice, or all of it once): one round fewer for the same traffic, so twice the budget
// (2 ranks bound, in place: 32 KiB 5.0-6.7 us direct against 7.3-8.0 by ring, 48 KiB 7.1-7.7
// against 8.0-10.8, 64 KiB even). With more peers it moves (ranks - 1) times the bytes.
bool goes_direct(const Context& c, std::size_t bytes_per_peer) {
  const int peers = c.size() - 1;
  const std::size_t budget = c.options().direct_bytes * (peers == 1 ? 2 : 1);
  return peers >= 1 && peers <= kMostDirectPeers && budget > 0 &&
         bytes_per_peer <= budget / static_cast<std::size_t>(peers);
}

}  // namespace

Algorithm Communicator::algorithm_for(std::size_t bytes) const {
  const Context& c = *context_;
  Algorithm a = c.options().algorithm;
  if (a != Algorithm::automatic) return a;
  // Direct where the whole call is a few KiB and the ranks are few: one step.
  if (goes_direct(c, bytes)) return Algorithm::direct;
  // Hierarchical from RISEML_SMALL_BYTES up (it runs halving-doubling across hosts itself when
  // its blocks are small). Else halving-doubling where the ring would be latency-bound: the
  // message is small, or a ring step would carry less than a quarter of RISEML_SMALL_BYTES
  // (8 ranks at 2.5 Gbit/s: 64 KiB at 0.12-0.14 GB/s busbw by ring, 0.23-0.26 by halving-doubling).
  const std::size_t small = c.options().small_message_bytes;
  if (c.hosts() > 1 && c.uniform_hosts() && c.local().size() > 1 && bytes >= small)
    return Algorithm::hierarchical;
  const bool latency_bound = bytes < small || bytes / static_cast<std::size_t>(c.size()) < small / 4;
  return latency_bound ? Algorithm::halving_doubling : Algorithm::ring;
}

namespace {

// float16/bfloat16 reduced through float32 (HalfReduce::float32), not on the wire as they are.
bool widens(const Context& c, DataType type) {
  return is_half_precision(type) && c.options().half_reduce == HalfReduce::float32;
}

// The allreduce of every rank (cross_hosts = false) or of the ranks with this rank's local index
// on every host (cross_hosts = true: the cross-host step of a hierarchical allreduce).
void reduce_all(Context& c, const void* in, void* out, std::size_t count, DataType type,
                ReduceOp op, Algorithm algorithm, bool cross_hosts) {
  run_collective(c, [&] {
    require(count == 0 || (in != nullptr && out != nullptr), "allreduce: null buffer");
    require_reducible(c, type, op, cross_hosts ? "cross_host_allreduce" : "allreduce");
    if (cross_hosts)
      require(c.uniform_hosts(),
              "cross_host_allreduce: the hosts run different numbers of ranks (start the same "
              "number of tasks on every node)");
    const bool wide = widens(c, type);
    const std::size_t work_esize = wide ? 4 : element_size(type);
    const std::size_t piece = wide ? std::min(count, kWidePieceElements) : count;
    const Group group = cross_hosts ? c.column() : c.world();
    if (cross_hosts)
      algorithm = piece * work_esize < c.options().small_message_bytes ? Algorithm::halving_doubling
                                                                       : Algorithm::ring;
    CallTag tag;
    tag.sequence = c.next_sequence();
    tag.count = count;
    tag.collective = Collective::allreduce;
    tag.type = static_cast<std::uint8_t>(type);
    tag.op = static_cast<std::uint8_t>(op);
    tag.algorithm = static_cast<std::uint8_t>(algorithm);
    auto run = [&](const std::byte* src, std::byte* dst, std::size_t n, DataType t) {
      const ReduceArgs args{src, dst, n, t, op, op == ReduceOp::average ? group.size() : 1};
      switch (algorithm) {
        case Algorithm::automatic:
        case Algorithm::ring: ring_allreduce(c, tag, group, args); break;
        case Algorithm::halving_doubling: halving_doubling_allreduce(c, tag, group, args); break;
        case Algorithm::direct: direct_allreduce(c, tag, group, args); break;
        case Algorithm::hierarchical: hierarchical_allreduce(c, tag, args); break;
      }
    };
    auto* src = static_cast<const std::byte*>(in);
    auto* dst = static_cast<std::byte*>(out);
    if (!wide) {
      run(src, dst, count, type);
      return;
    }
    // Accumulate in float32 and round once at the end.
    auto* wide_buffer = reinterpret_cast<float*>(c.scratch(kWidePieceElements * 4, 0));
    std::size_t done = 0;
    do {
      const std::size_t n = std::min(piece, count - done);
      kernels::widen_to_float(type, src + done * 2, wide_buffer, n);
      run(reinterpret_cast<std::byte*>(wide_buffer), reinterpret_cast<std::byte*>(wide_buffer),
          n, DataType::float32);
      kernels::narrow_from_float(type, wide_buffer, dst + done * 2, n);
      done += n;
    } while (done < count);
  });
}

}  // namespace

void Communicator::allreduce(const void* in, void* out, std::size_t count, DataType type,
                             ReduceOp op, Algorithm algorithm) {
  if (algorithm == Algorithm::automatic) {
    const bool wide = widens(*context_, type);
    algorithm = algorithm_for(std::min(count, wide ? kWidePieceElements : count) *
                              (wide ? 4 : element_size(type)));
  }
  reduce_all(*context_, in, out, count, type, op, algorithm, false);
}

void Communicator::cross_host_allreduce(const void* in, void* out, std::size_t count,
                                        DataType type, ReduceOp op) {
  reduce_all(*context_, in, out, count, type, op, Algorithm::ring, true);
}

HostLayout Communicator::host_layout() const {
  const Context& c = *context_;
  HostLayout l;
  l.local_ranks.assign(c.local().ranks.begin(), c.local().ranks.end());
  l.local_index = c.local().index;
  l.cross_ranks.assign(c.column().ranks.begin(), c.column().ranks.end());
  l.cross_index = c.column().index;
  l.hosts = c.hosts();
  l.uniform = c.uniform_hosts();
  return l;
}

void Communicator::broadcast(void* buffer, std::size_t count, DataType type, int root) {
  Context& c = *context_;
  run_collective(c, [&] {
    require(count == 0 || buffer != nullptr, "broadcast: null buffer");
    require(root >= 0 && root < c.size(), "broadcast: root out of range");
    CallTag tag;
    tag.sequence = c.next_sequence();
    tag.count = count;
    tag.root = static_cast<std::uint32_t>(root);
    tag.collective = Collective::broadcast;
    tag.type = static_cast<std::uint8_t>(type);
    const std::size_t bytes = count * element_size(type);
    if (goes_direct(c, bytes))
      direct_broadcast(c, tag, c.world(), static_cast<std::byte*>(buffer), bytes, root);
    else
      binomial_broadcast(c, tag, c.world(), static_cast<std::byte*>(buffer), bytes, root);
  });
}

void Communicator::allgather(const void* in, void* out, std::size_t count, DataType type) {
  Context& c = *context_;
  // Equal counts: the allgatherv ring without a counts array (no allocation).
  run_collective(c, [&] {
    require(count == 0 || (in != nullptr && out != nullptr), "allgather: null buffer");
    CallTag tag;
    tag.sequence = c.next_sequence();
    tag.count = count * static_cast<std::size_t>(c.size());
    tag.collective = Collective::allgather;
    tag.type = static_cast<std::uint8_t>(type);
    const std::size_t block = count * element_size(type);
    if (goes_direct(c, block)) {
      direct_allgatherv(c, tag, c.world(), static_cast<const std::byte*>(in),
                        static_cast<std::byte*>(out), Blocks{{}, count}, type);
      return;
    }
    // Ring: in step s send block (i - s), receive block (i - s - 1) straight into place.
    auto* dst = static_cast<std::byte*>(out);
    const Group g = c.world();
    const int n = g.size(), i = g.index;
    auto at = [&](int b) { return dst + static_cast<std::size_t>((b % n + n) % n) * block; };
    if (block && at(i) != in) std::memmove(at(i), in, block);
    for (int s = 0; s < n - 1; ++s)
      exchange(c, tag, {g.at(i + 1), at(i - s), block}, {g.at(i - 1), block, at(i - s - 1), {}});
  });
}

void Communicator::allgatherv(const void* in, void* out, std::span<const std::size_t> counts,
                              DataType type) {
  Context& c = *context_;
  run_collective(c, [&] {
    require(counts.size() == static_cast<std::size_t>(c.size()),
            "allgatherv: counts must have one entry per rank");
    std::size_t total = 0;
    for (std::size_t k : counts) total += k;
    require(total == 0 || out != nullptr, "allgatherv: null buffer");
    require(counts[static_cast<std::size_t>(c.rank())] == 0 || in != nullptr,
            "allgatherv: null buffer");
    CallTag tag;
    tag.sequence = c.next_sequence();
    tag.count = total;
    tag.collective = Collective::allgather;
    tag.type = static_cast<std::uint8_t>(type);
    const Blocks blocks{counts, 0};
    if (goes_direct(c, blocks.largest(c.size()) * element_size(type)))
      direct_allgatherv(c, tag, c.world(), static_cast<const std::byte*>(in),
                        static_cast<std::byte*>(out), blocks, type);
    else
      ring_allgatherv(c, tag, c.world(), static_cast<const std::byte*>(in),
                      static_cast<std::byte*>(out), counts, type);
  });
}

void Communicator::reduce_scatter(const void* in, void* out, std::size_t count, DataType type,
                                  ReduceOp op) {
  Context& c = *context_;
  run_collective(c, [&] {
    require(count == 0 || (in != nullptr && out != nullptr), "reduce_scatter: null buffer");
    require_reducible(c, type, op, "reduce_scatter");
    CallTag tag;
    tag.sequence = c.next_sequence();
    tag.count = count;
    tag.collective = Collective::reduce_scatter;
    tag.type = static_cast<std::uint8_t>(type);
    tag.op = static_cast<std::uint8_t>(op);
    if (!widens(c, type)) {
      ring_reduce_scatter(c, tag, c.world(),
                          {static_cast<const std::byte*>(in), static_cast<std::byte*>(out),
                           count, type, op});
      if (op == ReduceOp::average) kernels::divide(type, out, count, c.size());
      return;
    }
    // float16/bfloat16: widen the whole input, reduce in float32, round once.
    const std::size_t total = count * static_cast<std::size_t>(c.size());
    auto* wide_in = reinterpret_cast<float*>(c.scratch((total + count) * 4, 2));
    float* wide_out = wide_in + total;
    kernels::widen_to_float(type, in, wide_in, total);
    ring_reduce_scatter(c, tag, c.world(),
                        {reinterpret_cast<const std::byte*>(wide_in),
                         reinterpret_cast<std::byte*>(wide_out), count, DataType::float32, op});
    if (op == ReduceOp::average) kernels::divide(DataType::float32, wide_out, count, c.size());
    kernels::narrow_from_float(type, wide_out, out, count);
  });
}

void Communicator::reduce_scatterv(const void* in, void* out,
                                   std::span<const std::size_t> counts, DataType type,
                                   ReduceOp op) {
  Context& c = *context_;
  run_collective(c, [&] {
    require(counts.size() == static_cast<std::size_t>(c.size()),
            "reduce_scatterv: counts must have one entry per rank");
    require_reducible(c, type, op, "reduce_scatterv");
    const std::size_t total = sum(counts);
    const std::size_t mine = counts[static_cast<std::size_t>(c.rank())];
    require(total == 0 || in != nullptr, "reduce_scatterv: null buffer");
    require(mine == 0 || out != nullptr, "reduce_scatterv: null buffer");
    CallTag tag;
    tag.sequence = c.next_sequence();
    tag.count = total;
    tag.collective = Collective::reduce_scatterv;
    tag.type = static_cast<std::uint8_t>(type);
    tag.op = static_cast<std::uint8_t>(op);
    const Blocks blocks{counts};
    if (!widens(c, type)) {
      ring_reduce_scatterv(c, tag, c.world(), static_cast<const std::byte*>(in),
                           static_cast<std::byte*>(out), blocks, type, op);
      if (op == ReduceOp::average) kernels::divide(type, out, mine, c.size());
      return;
    }
    // float16/bfloat16 through float32: widen the whole input, reduce, round once.
    auto* wide_in = reinterpret_cast<float*>(c.scratch((total + mine) * 4, 2));
    float* wide_out = wide_in + total;
    kernels::widen_to_float(type, in, wide_in, total);
    ring_reduce_scatterv(c, tag, c.world(), reinterpret_cast<const std::byte*>(wide_in),
                         reinterpret_cast<std::byte*>(wide_out), blocks, DataType::float32, op);
    if (op == ReduceOp::average) kernels::divide(DataType::float32, wide_out, mine, c.size());
    kernels::narrow_from_float(type, wide_out, out, mine);
  });
}

void Communicator::alltoallv(const void* in, std::span<const std::size_t> send_counts,
                             void* out, std::span<const std::size_t> recv_counts,
                             DataType type) {
  Context& c = *context_;
  run_collective(c, [&] {
    const auto n = static_cast<std::size_t>(c.size());
    require(send_counts.size() == n && recv_counts.size() == n,
            "alltoallv: send_counts and recv_counts must have one entry per rank");
    const std::size_t sent = sum(send_counts) * element_size(type);
    const std::size_t received = sum(recv_counts) * element_size(type);
    require(sent == 0 || in != nullptr, "alltoallv: null buffer");
    require(received == 0 || out != nullptr, "alltoallv: null buffer");
    require(!overlap(in, sent, out, received), "alltoallv: in and out overlap");
    CallTag tag;
    tag.sequence = c.next_sequence();
    tag.collective = Collective::alltoallv;
    tag.type = static_cast<std::uint8_t>(type);
    // The counts agree on every pair after this, so pairs with nothing to move can skip.
    check_alltoallv_counts(c, tag, c.world(), send_counts, recv_counts);
    pairwise_alltoallv(c, tag, c.world(), static_cast<const std::byte*>(in), Blocks{send_counts},
                       static_cast<std::byte*>(out), Blocks{recv_counts}, type, true);
  });
}

void Communicator::alltoall(const void* in, void* out, std::size_t count, DataType type) {
  Context& c = *context_;
  run_collective(c, [&] {
    const std::size_t bytes = count * static_cast<std::size_t>(c.size()) * element_size(type);
    require(bytes == 0 || (in != nullptr && out != nullptr), "alltoall: null buffer");
    require(!overlap(in, bytes, out, bytes), "alltoall: in and out overlap");
    CallTag tag;
    tag.sequence = c.next_sequence();
    tag.count = count;
    tag.collective = Collective::alltoall;
    tag.type = static_cast<std::uint8_t>(type);
    // Equal counts need no check of their own: every message's tag carries the count. Empty
    // messages still travel, so a rank that passes another count is caught, not waited for.
    const Blocks blocks{{}, count};
    pairwise_alltoallv(c, tag, c.world(), static_cast<const std::byte*>(in), blocks,
                       static_cast<std::byte*>(out), blocks, type, false);
  });
}

// Adasum combines per tensor: ranks that split the same total differently must not meet
// quietly, so the tag carries a hash (FNV-1a) of the tensor counts.
namespace {
std::uint32_t tensor_layout_hash(std::span<const std::size_t> tensor_counts) {
  std::uint32_t h = 2166136261u;
  for (std::size_t k : tensor_counts) {
    for (int b = 0; b < 8; ++b) {
      h ^= static_cast<std::uint8_t>(static_cast<std::uint64_t>(k) >> (8 * b));
      h *= 16777619u;
    }
  }
  return h;
}
}  // namespace

void Communicator::adasum_allreduce(const void* in, void* out,
                                    std::span<const std::size_t> tensor_counts, DataType type) {
  Context& c = *context_;
  run_collective(c, [&] {
    if (type != DataType::float32 && type != DataType::float64 && !is_half_precision(type))
      throw CollectiveError(ErrorKind::invalid_argument,
                            "adasum_allreduce: Adasum needs floating point tensors, not " +
                                std::string(to_string(type)));
    std::size_t count = 0;
    for (std::size_t k : tensor_counts) count += k;
    require(count == 0 || (in != nullptr && out != nullptr), "adasum_allreduce: null buffer");
    CallTag tag;
    tag.sequence = c.next_sequence();
    tag.count = count;
    tag.collective = Collective::adasum;
    tag.root = tensor_layout_hash(tensor_counts);
    tag.type = static_cast<std::uint8_t>(type);
    tag.op = static_cast<std::uint8_t>(ReduceOp::sum);
    riseml::adasum_allreduce(c, tag, c.world(), static_cast<const std::byte*>(in),
                             static_cast<std::byte*>(out), tensor_counts, type);
  });
}

void Communicator::barrier() {
  Context& c = *context_;
  run_collective(c, [&] {
    CallTag tag;
    tag.sequence = c.next_sequence();
    tag.collective = Collective::barrier;
    if (goes_direct(c, 0))
      direct_barrier(c, tag, c.world());
    else
      dissemination_barrier(c, tag, c.world());
  });
}

}  // namespace riseml
