// Direct barrier: every rank signals every other at once and waits for all of them; one
// synchronisation instead of log2(n) rounds, for few ranks.
#include "../transport/exchange.hpp"
#include "algorithms.hpp"

namespace riseml {

void direct_barrier(Context& c, const CallTag& tag, Group g) {
  const auto peers = static_cast<std::size_t>(g.size() - 1);
  auto peer = [&](std::size_t k) { return g.at(g.index + 1 + static_cast<int>(k)); };
  auto send = [&](std::size_t k) { return SendSpec{peer(k), nullptr, 0}; };
  auto recv = [&](std::size_t k) { return RecvSpec{peer(k), 0, nullptr, {}}; };
  exchange_all(c, tag, peers, send, recv);
}

}  // namespace riseml
