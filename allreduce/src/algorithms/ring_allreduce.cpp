// Ring allreduce. Reduce-scatter: in step s each rank sends block (i - s) to its right and
// reduces block (i - s - 1) from its left into `out` as the segments arrive, reading its own
// contribution from `in` (each block arrives exactly once, so `in` is never copied). Allgather:
// each rank forwards the block it last completed, received straight into `out`. Every send
// after the first forwards what the previous receive wrote, so the whole ring runs as one
// pipeline (exchange_stream): a segment is passed on while it is still in cache.
#include <riseml/datatype.hpp>

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "../kernels/reduce_kernels.hpp"
#include "../transport/exchange.hpp"
#include "algorithms.hpp"

namespace riseml {

namespace {

constexpr std::size_t kStreamingBytes = 4 << 20;

bool streaming_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("RISEML_STREAMING_STORES");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return on;
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
  auto reduce = [&](const std::byte* data, std::size_t off, std::size_t len) {
    kernels::reduce(a.type, a.op, reduce_out + off, reduce_mine + off, data, len / plan.esize);
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
      return StreamRecv{plan.bytes(b), nullptr, reduce};
    }
    // The last block received is not forwarded: for large messages, stream it to memory
    // rather than pulling each destination line into the cache first.
    if (step + 1 == static_cast<std::size_t>(2 * (plan.m - 1)) &&
        plan.bytes(b) >= kStreamingBytes && streaming_enabled()) {
      reduce_out = a.out + plan.lo(b);
      return StreamRecv{plan.bytes(b), nullptr, stream_copy};
    }
    return StreamRecv{plan.bytes(b), a.out + plan.lo(b), {}};
  };
  exchange_stream(c, tag, g.at(g.index + 1), g.at(g.index - 1), last - first, send_step,
                  recv_step);
}

}  // namespace

void ring_reduce_scatter_phase(Context& c, const CallTag& tag, Group g, const ReduceArgs& a) {
  if (g.size() == 1) {
    if (a.out != a.in && a.count) std::memcpy(a.out, a.in, a.count * element_size(a.type));
    return;
  }
  run_ring(c, tag, g, a, 0, static_cast<std::size_t>(g.size() - 1));
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
    return;
  }
  run_ring(c, tag, g, a, 0, 2 * static_cast<std::size_t>(g.size() - 1));
}

}  // namespace riseml
