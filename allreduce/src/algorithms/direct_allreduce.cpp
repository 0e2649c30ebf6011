// Direct allreduce, for calls too small for a ring or halving-doubling to pay: every rank sends
// its whole input to every other at once and receives all of theirs (one exchange, no step
// waits for another), then adds the inputs up in rank order, so every rank computes the same
// bits. One round of latency instead of 2 log2(n), over shared memory or TCP (the latency of a
// call of a few KiB is the rounds, not the bytes).
#include <cstring>

#include <riseml/reduce_kernels.hpp>
#include "../transport/exchange.hpp"
#include "algorithms.hpp"

namespace riseml {

void direct_allreduce(Context& c, const CallTag& tag, Group g, const ReduceArgs& a) {
  const int n = g.size();
  const std::size_t bytes = a.count * element_size(a.type);
  if (n == 1 || bytes == 0) {
    if (a.out != a.in && bytes) std::memcpy(a.out, a.in, bytes);
    divide_result(a, a.out, a.count);
    return;
  }
  if (n == 2) {
    // Reduce straight out of the peer's message, member 0's input first.
    const int peer = g.at(g.index + 1);
    const bool first = g.index == 0;
    std::byte* dst = a.out;
    auto reduce = [&](const std::byte* data, std::size_t off, std::size_t len) {
      const std::size_t n_elem = len / element_size(a.type);
      kernels::reduce(a.type, a.op, dst + off, first ? a.in + off : data, first ? data : a.in + off, n_elem);
      divide_result(a, dst + off, n_elem);
    };
    if (a.out == a.in && bytes <= c.link(peer).send_capacity()) {
      // In place over shared memory: the whole input is copied into the peer's slots first,
      // then the sum is written over it; no scratch, no copy back. The send cannot wait on
      // this call's receive: the peer reads what was sent before in calls it finishes without
      // this rank, and then the slots hold the whole message.
      exchange(c, tag, {peer, a.in, bytes}, {});
      exchange(c, tag, {}, {peer, bytes, nullptr, reduce});
      return;
    }
    // In place elsewhere, into scratch: this rank's input may still be on its way out (a socket
    // takes it bit by bit) while the peer's arrives.
    if (a.out == a.in) dst = c.scratch(bytes, 1);
    exchange(c, tag, {peer, a.in, bytes}, {peer, bytes, nullptr, reduce});
    if (dst != a.out) std::memcpy(a.out, dst, bytes);
    return;
  }
  // Slot k of the scratch holds the input of member k (this rank's own slot unused unless an
  // in-place call needs its input kept: the sum overwrites `out` from member 0 on).
  std::byte* inputs = c.scratch(bytes * static_cast<std::size_t>(n), 1);
  auto input_of = [&](int member) { return inputs + bytes * static_cast<std::size_t>(member); };
  const auto peers = static_cast<std::size_t>(n - 1);
  auto member = [&](std::size_t k) { return (g.index + 1 + static_cast<int>(k)) % n; };
  auto send = [&](std::size_t k) { return SendSpec{g.at(member(k)), a.in, bytes}; };
  auto recv = [&](std::size_t k) { return RecvSpec{g.at(member(k)), bytes, input_of(member(k)), {}}; };
  exchange_all(c, tag, peers, send, recv);
  const std::byte* mine = a.in;
  if (a.out == a.in && g.index >= 2) {
    std::memcpy(input_of(g.index), a.in, bytes);
    mine = input_of(g.index);
  }
  auto x = [&](int m) { return m == g.index ? mine : input_of(m); };
  kernels::reduce(a.type, a.op, a.out, x(0), x(1), a.count);
  for (int m = 2; m < n; ++m) kernels::reduce(a.type, a.op, a.out, a.out, x(m), a.count);
  divide_result(a, a.out, a.count);
}

}  // namespace riseml
