// Recursive halving-doubling allreduce (Rabenseifner). With n = 2^k + r ranks, the first 2r
// fold in pairs: the even one sends its whole input to the odd one, which continues for both.
// The 2^k remaining ranks halve the vector k times, swapping halves with the partner at
// distance 2^k/2, 2^k/4, ..., 1 and reducing the half they keep; then they double it back in
// reverse order. Finally the odd ranks of the folded pairs send the result to their partners.
// An average divides each kept piece between the two phases.
#include <cstring>

#include <riseml/reduce_kernels.hpp>
#include "../transport/exchange.hpp"
#include "algorithms.hpp"

namespace riseml {

void halving_doubling_allreduce(Context& c, const CallTag& tag, Group g, const ReduceArgs& a) {
  const int n = g.size();
  const int i = g.index;
  const std::size_t esize = element_size(a.type);
  const std::size_t bytes = a.count * esize;
  if (n == 1) {
    if (a.out != a.in && bytes) std::memcpy(a.out, a.in, bytes);
    divide_result(a, a.out, a.count);
    return;
  }
  int p2 = 1;
  while (p2 * 2 <= n) p2 *= 2;
  const int extra = n - p2;

  // Fold.
  const std::byte* cur = a.in;  // where this rank's partial result lives
  int vrank;                    // index among the 2^k, or -1 when folded away
  if (i < 2 * extra) {
    if (i % 2 == 0) {
      exchange(c, tag, {g.at(i + 1), a.in, bytes}, {});
      vrank = -1;
    } else {
      auto reduce = [&](const std::byte* data, std::size_t off, std::size_t len) {
        kernels::reduce(a.type, a.op, a.out + off, a.in + off, data, len / esize);
      };
      exchange(c, tag, {}, {g.at(i - 1), bytes, nullptr, reduce});
      cur = a.out;
      vrank = i / 2;
    }
  } else {
    vrank = i - extra;
  }
  auto real_index = [&](int v) { return v < extra ? 2 * v + 1 : v + extra; };

  if (vrank >= 0) {
    // Reduce-scatter by recursive halving; remember each step's range for the way back.
    std::size_t lo = 0, hi = a.count;
    std::size_t range_lo[32], range_hi[32];
    int steps = 0;
    for (int d = p2 / 2; d >= 1; d /= 2, ++steps) {
      const int partner = real_index(vrank ^ d);
      const std::size_t mid = lo + (hi - lo) / 2;
      const bool keep_low = (vrank & d) == 0;
      const std::size_t keep_lo = keep_low ? lo : mid, keep_hi = keep_low ? mid : hi;
      const std::size_t give_lo = keep_low ? mid : lo, give_hi = keep_low ? hi : mid;
      range_lo[steps] = lo;
      range_hi[steps] = hi;
      const std::byte* src = cur;
      auto reduce = [&](const std::byte* data, std::size_t off, std::size_t len) {
        const std::size_t at = keep_lo * esize + off;
        kernels::reduce(a.type, a.op, a.out + at, src + at, data, len / esize);
      };
      exchange(c, tag, {g.at(partner), src + give_lo * esize, (give_hi - give_lo) * esize},
               {g.at(partner), (keep_hi - keep_lo) * esize, nullptr, reduce});
      cur = a.out;
      lo = keep_lo;
      hi = keep_hi;
    }
    // The piece this rank kept is complete: an average divides it here, 1/2^k of the result.
    divide_result(a, a.out + lo * esize, hi - lo);
    // Allgather by recursive doubling, undoing the halving steps in reverse.
    for (int s = steps - 1, d = 1; s >= 0; --s, d *= 2) {
      const int partner = real_index(vrank ^ d);
      const std::size_t plo = range_lo[s], phi = range_hi[s];
      // The partner holds the other half of [plo, phi).
      const std::size_t other_lo = lo == plo ? hi : plo;
      const std::size_t other_hi = lo == plo ? phi : lo;
      exchange(c, tag, {g.at(partner), a.out + lo * esize, (hi - lo) * esize},
               {g.at(partner), (other_hi - other_lo) * esize, a.out + other_lo * esize, {}});
      lo = plo;
      hi = phi;
    }
  }

  // Unfold.
  if (i < 2 * extra) {
    if (i % 2 == 1)
      exchange(c, tag, {g.at(i - 1), a.out, bytes}, {});
    else
      exchange(c, tag, {}, {g.at(i + 1), bytes, a.out, {}});
  }
}

}  // namespace riseml
