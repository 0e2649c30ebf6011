// Ring reduce-scatter with uneven blocks: rank i ends on block i (blocks.count(i) elements). In
// step s rank i sends block (i - s - 1) and reduces block (i - s - 2) from its left, straight
// out of the received segments, with its own contribution read from `in`. Partial blocks that
// travel on live in two scratch buffers of the largest block's size, used in turn (one is being
// sent while the other is filled); the last step reduces into `out`. Each block is reduced
// along one chain, so the result is the same bits on every call.
#include <cstring>

#include <riseml/reduce_kernels.hpp>
#include "../transport/exchange.hpp"
#include "algorithms.hpp"

namespace riseml {

void ring_reduce_scatterv(Context& c, const CallTag& tag, Group g, const std::byte* in,
                          std::byte* out, const Blocks& blocks, DataType type, ReduceOp op) {
  const int m = g.size();
  const int i = g.index;
  const std::size_t esize = element_size(type);
  auto at = [&](int b) { return static_cast<std::size_t>(((b % m) + m) % m); };
  auto offset = [&](int b) { return blocks.start(static_cast<int>(at(b))) * esize; };
  auto bytes = [&](int b) { return blocks.count(static_cast<int>(at(b))) * esize; };
  if (m == 1) {
    if (out != in && bytes(0)) std::memmove(out, in, bytes(0));
    return;
  }
  const std::size_t largest = blocks.largest(m) * esize;
  std::byte* scratch[2] = {c.scratch(largest, 0), c.scratch(largest, 1)};
  const int right = g.at(i + 1), left = g.at(i - 1);
  const std::byte* sending = in + offset(i - 1);
  for (int s = 0; s < m - 1; ++s) {
    const int send_block = i - s - 1, recv_block = i - s - 2;
    std::byte* into = s == m - 2 ? out : scratch[s % 2];
    const std::byte* mine = in + offset(recv_block);
    auto reduce = [&](const std::byte* data, std::size_t off, std::size_t len) {
      kernels::reduce(type, op, into + off, mine + off, data, len / esize);
    };
    exchange(c, tag, {right, sending, bytes(send_block)}, {left, bytes(recv_block), nullptr, reduce});
    sending = into;
  }
}

}  // namespace riseml
