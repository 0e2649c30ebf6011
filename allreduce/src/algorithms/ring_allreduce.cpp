// Ring allreduce. Reduce-scatter: in step s each rank sends block (i - s) to its right and
// reduces block (i - s - 1) from its left into `out` as the segments arrive, reading its own
// contribution from `in` (each block arrives exactly once, so `in` is never copied). Allgather:
// each rank forwards the block it last completed, received straight into `out`. Every send
// after the first forwards what the previous receive wrote, so the whole ring runs as one
// pipeline (exchange_stream): a segment is passed on while it is still in cache. An average
// divides each segment of a rank's own block as the last reduce-scatter step completes it, so
// the blocks travel divided and no rank makes a pass over the whole result.
#include <riseml/datatype.hpp>

#include <cstring>
#include <algorithm>
#include <string_view>

#include <riseml/reduce_kernels.hpp>
#include "../transport/exchange.hpp"
#include "algorithms.hpp"
#include "streaming_rule.hpp"

namespace riseml {

namespace {

// The bytes this host's ranks touch in one call: each its input and, out of place, its output.
std::size_t host_footprint(Context& c, const ReduceArgs& a) {
  const std::size_t bytes = a.count * element_size(a.type);
  return c.local().size() * bytes * (a.out == a.in ? 1 : 2);
}

struct RingPlan {
  int m, i;
  std::size_t count, esize;
  int block_of_send(std::size_t k) const {  // steps 0..m-2 reduce-scatter, then allgather
    const int s = static_cast<int>(k);
    const int b = s < m - 1 ? i - s : i + 1 - (s - (m - 1));
    return ((b % m) + m) % m;
  }
  int block_of_recv(std::size_t k) const {
    const int s = static_cast<int>(k);
    const int b = s < m - 1 ? i - s - 1 : i - (s - (m - 1));
    return ((b % m) + m) % m;
  }
  std::size_t lo(int b) const { return block_start(count, m, b) * esize; }
  std::size_t bytes(int b) const { return lo(b + 1) - lo(b); }
};

void run_ring(Context& c, const CallTag& tag, Group g, const ReduceArgs& a, std::size_t first,
              std::size_t last) {
  const RingPlan plan{g.size(), g.index, a.count, element_size(a.type)};
  // Per-receive state for the reducing sink (receives begin one after another).
  std::byte* reduce_out = nullptr;
  const std::byte* reduce_mine = nullptr;
  bool completes = false;  // this receive completes the rank's block: divide it (average)
  auto reduce = [&](const std::byte* data, std::size_t off, std::size_t len) {
    kernels::reduce(a.type, a.op, reduce_out + off, reduce_mine + off, data, len / plan.esize);
    if (completes) divide_result(a, reduce_out + off, len / plan.esize);
  };
  auto stream_copy = [&](const std::byte* data, std::size_t off, std::size_t len) {
    kernels::streaming_copy(reduce_out + off, data, len);
  };
  auto send_step = [&](std::size_t k) {
    const std::size_t step = first + k;
    const int b = plan.block_of_send(step);
    return StreamSend{(step == 0 ? a.in : a.out) + plan.lo(b), plan.bytes(b)};
  };
  auto recv_step = [&](std::size_t k) {
    const std::size_t step = first + k;
    const int b = plan.block_of_recv(step);
    if (step < static_cast<std::size_t>(plan.m - 1)) {
      reduce_out = a.out + plan.lo(b);
      reduce_mine = a.in + plan.lo(b);
      completes = step + 2 == static_cast<std::size_t>(plan.m);
      return StreamRecv{plan.bytes(b), nullptr, reduce};
    }
    // The last block received is not forwarded: for large messages, stream it to memory
    // rather than pulling each destination line into the cache first.
    if (step + 1 == static_cast<std::size_t>(2 * (plan.m - 1)) &&
        streaming_pays(c.options(), plan.bytes(b), host_footprint(c, a))) {
      reduce_out = a.out + plan.lo(b);
      return StreamRecv{plan.bytes(b), nullptr, stream_copy};
    }
    return StreamRecv{plan.bytes(b), a.out + plan.lo(b), {}};
  };
  exchange_stream(c, tag, g.at(g.index + 1), g.at(g.index - 1), last - first, send_step,
                  recv_step);
}

// Large allreduce as a pipeline of independent rings over chunks of the option ring_chunk_kib
// (512 KiB) per rank: a block reduced in one chunk is forwarded a few hundred microseconds later,
// still in cache, instead of being read back from memory after the whole reduce-scatter (with 2
// ranks the forward of an unchunked block starts only once all of it is reduced). Each element
// is still reduced along one chain and then copied, so every rank gets the same bits on every
// call.
void run_ring_chunked(Context& c, const CallTag& tag, Group g, const ReduceArgs& a,
                      std::size_t chunk_count) {
  const int m = g.size();
  const std::size_t esize = element_size(a.type);
  const std::size_t per_chunk = static_cast<std::size_t>(2 * (m - 1));
  const std::size_t chunks = (a.count + chunk_count - 1) / chunk_count;
  const bool stream_last = streaming_pays(
      c.options(), a.count * esize / static_cast<std::size_t>(m), host_footprint(c, a));
  auto plan_of = [&](std::size_t j) {
    const std::size_t first = j * chunk_count;
    return RingPlan{m, g.index, std::min(chunk_count, a.count - first), esize};
  };
  auto base_of = [&](std::size_t j) { return j * chunk_count * esize; };
  std::byte* reduce_out = nullptr;
  const std::byte* reduce_mine = nullptr;
  bool completes = false;  // as in run_ring
  auto reduce = [&](const std::byte* data, std::size_t off, std::size_t len) {
    kernels::reduce(a.type, a.op, reduce_out + off, reduce_mine + off, data, len / esize);
    if (completes) divide_result(a, reduce_out + off, len / esize);
  };
  auto stream_copy = [&](const std::byte* data, std::size_t off, std::size_t len) {
    kernels::streaming_copy(reduce_out + off, data, len);
  };
  auto send_step = [&](std::size_t k) {
    const std::size_t j = k / per_chunk, step = k % per_chunk;
    const RingPlan plan = plan_of(j);
    const int b = plan.block_of_send(step);
    const std::size_t at = base_of(j) + plan.lo(b);
    return StreamSend{(step == 0 ? a.in : a.out) + at, plan.bytes(b), step == 0};
  };
  auto recv_step = [&](std::size_t k) {
    const std::size_t j = k / per_chunk, step = k % per_chunk;
    const RingPlan plan = plan_of(j);
    const int b = plan.block_of_recv(step);
    const std::size_t at = base_of(j) + plan.lo(b);
    if (step < static_cast<std::size_t>(m - 1)) {
      reduce_out = a.out + at;
      reduce_mine = a.in + at;
      completes = step + 2 == static_cast<std::size_t>(m);
      return StreamRecv{plan.bytes(b), nullptr, reduce};
    }
    if (step + 1 == per_chunk && stream_last) {
      reduce_out = a.out + at;
      return StreamRecv{plan.bytes(b), nullptr, stream_copy};
    }
    return StreamRecv{plan.bytes(b), a.out + at, {}};
  };
  exchange_stream(c, tag, g.at(g.index + 1), g.at(g.index - 1), chunks * per_chunk, send_step,
                  recv_step);
}

}  // namespace

void ring_reduce_scatter_phase(Context& c, const CallTag& tag, Group g, const ReduceArgs& a) {
  if (g.size() == 1) {
    if (a.out != a.in && a.count) std::memcpy(a.out, a.in, a.count * element_size(a.type));
    return;
  }
  // Only a block reduced over the whole group may be divided.
  ReduceArgs partial = a;
  partial.divisor = 1;
  run_ring(c, tag, g, partial, 0, static_cast<std::size_t>(g.size() - 1));
}

void ring_allgather_phase(Context& c, const CallTag& tag, Group g, std::byte* out,
                          std::size_t count, DataType type) {
  if (g.size() == 1) return;
  const std::size_t m1 = static_cast<std::size_t>(g.size() - 1);
  run_ring(c, tag, g, {out, out, count, type, ReduceOp::sum}, m1, 2 * m1);
}

void ring_allreduce(Context& c, const CallTag& tag, Group g, const ReduceArgs& a) {
  if (g.size() == 1) {
    if (a.out != a.in && a.count) std::memcpy(a.out, a.in, a.count * element_size(a.type));
    divide_result(a, a.out, a.count);
    return;
  }
  const std::size_t esize = element_size(a.type);
  const std::size_t chunk_bytes =
      (c.options().ring_chunk_kib << 10) * static_cast<std::size_t>(g.size());
  // Shared memory only: over TCP a chunk is one more round trip (and the kernel's socket
  // buffers already decouple the two halves).
  if (g.size() == 2 && chunk_bytes >= esize && a.count * esize >= 2 * chunk_bytes &&
      std::string_view(c.link(g.at(g.index + 1)).kind()) == "shm") {
    run_ring_chunked(c, tag, g, a, chunk_bytes / esize);
    return;
  }
  run_ring(c, tag, g, a, 0, 2 * static_cast<std::size_t>(g.size() - 1));
}

}  // namespace riseml
