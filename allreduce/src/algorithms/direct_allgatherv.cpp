// Direct allgather(v): every rank sends its block to every other at once and receives each
// peer's block straight into its place; one step instead of n - 1 ring steps, for small blocks
// among few ranks (on one host or several).
#include <cstring>

#include "../transport/exchange.hpp"
#include "algorithms.hpp"

namespace riseml {

void direct_allgatherv(Context& c, const CallTag& tag, Group g, const std::byte* in,
                       std::byte* out, const Blocks& blocks, DataType type) {
  const int n = g.size(), i = g.index;
  const std::size_t esize = element_size(type);
  std::byte* own = out + blocks.start(i) * esize;
  const std::size_t own_bytes = blocks.count(i) * esize;
  if (own_bytes && own != in) std::memmove(own, in, own_bytes);
  auto member = [&](std::size_t k) { return (i + 1 + static_cast<int>(k)) % n; };
  auto send = [&](std::size_t k) { return SendSpec{g.at(member(k)), own, own_bytes}; };
  auto recv = [&](std::size_t k) {
    const int m = member(k);
    return RecvSpec{g.at(m), blocks.count(m) * esize, out + blocks.start(m) * esize, {}};
  };
  exchange_all(c, tag, static_cast<std::size_t>(n - 1), send, recv);
}

}  // namespace riseml
