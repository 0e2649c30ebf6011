// Binomial-tree broadcast: ranks relative to the root receive once from the rank that differs
// in their lowest set bit, then send to the ranks below them in the tree. log2(n) rounds.
#include "../transport/exchange.hpp"
#include "algorithms.hpp"

namespace riseml {

void binomial_broadcast(Context& c, const CallTag& tag, Group g, std::byte* buffer,
                        std::size_t bytes, int root_index) {
  const int n = g.size();
  const int v = ((g.index - root_index) % n + n) % n;
  auto real = [&](int rel) { return g.at(rel + root_index); };
  int mask = 1;
  while (mask < n) {
    if (v & mask) {
      exchange(c, tag, {}, {real(v - mask), bytes, buffer, {}});
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (v + mask < n) exchange(c, tag, {real(v + mask), buffer, bytes}, {});
}

}  // namespace riseml
