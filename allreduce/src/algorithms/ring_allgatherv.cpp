// Ring allgather(v): each rank's block travels once around the ring, received straight into
// its place in `out`.
#include <cstring>

#include "../transport/exchange.hpp"
#include "algorithms.hpp"

namespace riseml {

void ring_allgatherv(Context& c, const CallTag& tag, Group g, const std::byte* in,
                     std::byte* out, std::span<const std::size_t> counts, DataType type) {
  const int m = g.size();
  const int i = g.index;
  const std::size_t esize = element_size(type);
  // Offsets without allocating: a running sum per lookup (m is small).
  auto offset = [&](int b) {
    std::size_t o = 0;
    for (int k = 0; k < b; ++k) o += counts[static_cast<std::size_t>(k)];
    return o * esize;
  };
  auto bytes = [&](int b) { return counts[static_cast<std::size_t>(b)] * esize; };
  if (bytes(i) && out + offset(i) != in) std::memmove(out + offset(i), in, bytes(i));
  const int right = g.at(i + 1), left = g.at(i - 1);
  for (int s = 0; s < m - 1; ++s) {
    const int send_block = ((i - s) % m + m) % m;
    const int recv_block = ((i - s - 1) % m + m) % m;
    exchange(c, tag, {right, out + offset(send_block), bytes(send_block)},
             {left, bytes(recv_block), out + offset(recv_block), {}});
  }
}

}  // namespace riseml
