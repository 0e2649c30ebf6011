// Dissemination barrier: in round k every rank signals the rank 2^k ahead and waits for the
// one 2^k behind; after ceil(log2 n) rounds every rank has heard from every other indirectly.
#include "../transport/exchange.hpp"
#include "algorithms.hpp"

namespace riseml {

void dissemination_barrier(Context& c, const CallTag& tag, Group g) {
  const int n = g.size();
  for (int k = 1; k < n; k <<= 1)
    exchange(c, tag, {g.at(g.index + k), nullptr, 0}, {g.at(g.index - k), 0, nullptr, {}});
}

}  // namespace riseml
