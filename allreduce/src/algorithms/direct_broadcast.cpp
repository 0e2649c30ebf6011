// Direct broadcast: the root sends to every other rank at once, each receives once; one step
// instead of log2(n) rounds of a tree, for small messages among few ranks.
#include "../transport/exchange.hpp"
#include "algorithms.hpp"

namespace riseml {

void direct_broadcast(Context& c, const CallTag& tag, Group g, std::byte* buffer,
                      std::size_t bytes, int root_index) {
  if (g.index != root_index) {
    exchange(c, tag, {}, {g.at(root_index), bytes, buffer, {}});
    return;
  }
  auto send = [&](std::size_t k) {
    return SendSpec{g.at(root_index + 1 + static_cast<int>(k)), buffer, bytes};
  };
  auto nothing = [](std::size_t) { return RecvSpec{}; };
  exchange_all(c, tag, static_cast<std::size_t>(g.size() - 1), send, nothing);
}

}  // namespace riseml
