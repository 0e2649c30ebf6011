// Ring reduce-scatter with rank i ending on block i: in step s rank i sends block (i - s - 1)
// and reduces block (i - s - 2) from its left. Partial blocks that travel on live in two
// scratch blocks used in turn (one is being sent while the other is filled); the last step
// reduces straight into `out`.
#include <cstring>

#include <riseml/reduce_kernels.hpp>
#include "../transport/exchange.hpp"
#include "algorithms.hpp"

namespace riseml {

void ring_reduce_scatter(Context& c, const CallTag& tag, Group g, const ReduceArgs& a) {
  const int m = g.size();
  const int i = g.index;
  const std::size_t esize = element_size(a.type);
  const std::size_t block = a.count * esize;  // a.count is the count per rank here
  if (m == 1) {
    if (a.out != a.in && block) std::memcpy(a.out, a.in, block);
    return;
  }
  std::byte* scratch[2] = {c.scratch(block, 0), c.scratch(block, 1)};
  const int right = g.at(i + 1), left = g.at(i - 1);
  const std::byte* sending = nullptr;
  for (int s = 0; s < m - 1; ++s) {
    const int send_block = ((i - s - 1) % m + m) % m;
    const int recv_block = ((i - s - 2) % m + m) % m;
    if (s == 0) sending = a.in + static_cast<std::size_t>(send_block) * block;
    std::byte* into = s == m - 2 ? a.out : scratch[s % 2];
    const std::byte* mine = a.in + static_cast<std::size_t>(recv_block) * block;
    auto reduce = [&](const std::byte* data, std::size_t off, std::size_t len) {
      kernels::reduce(a.type, a.op, into + off, mine + off, data, len / esize);
    };
    exchange(c, tag, {right, sending, block}, {left, block, nullptr, reduce});
    sending = into;
  }
}

}  // namespace riseml
