// Hierarchical allreduce: a ring reduce-scatter among the ranks of each host (shared memory)
// leaves local rank j with block (j + 1) of the buffer reduced over its host; the ranks holding
// the same block on every host allreduce it by ring across hosts (TCP), each carrying 1/L of
// the data (by halving-doubling when each ring step would carry less than a quarter of
// RISEML_SMALL_BYTES: latency-bound); a ring allgather inside each host spreads the result.
// With one host, or hosts of different sizes, it is the plain ring.
#include "../transport/exchange.hpp"
#include "algorithms.hpp"

namespace riseml {

void hierarchical_allreduce(Context& c, const CallTag& tag, const ReduceArgs& a) {
  if (!c.uniform_hosts() || c.hosts() == 1 || c.local().size() == 1) {
    ring_allreduce(c, tag, c.world(), a);
    return;
  }
  const Group local = c.local();
  const int L = local.size();
  ring_reduce_scatter_phase(c, tag, local, a);
  const int mine = (local.index + 1) % L;
  const std::size_t esize = element_size(a.type);
  const std::size_t lo = block_start(a.count, L, mine);
  const std::size_t hi = block_start(a.count, L, mine + 1);
  std::byte* block = a.out + lo * esize;
  const Group column = c.column();
  // An average divides in the column's allreduce (its blocks are complete only there); the
  // in-host reduce-scatter only sums.
  const ReduceArgs cross{block, block, hi - lo, a.type, a.op, a.divisor};
  // Every rank of a column holds the same block, so the column agrees on the choice.
  if ((hi - lo) * esize / static_cast<std::size_t>(column.size()) <
      c.options().small_message_bytes / 4)
    halving_doubling_allreduce(c, tag, column, cross);
  else
    ring_allreduce(c, tag, column, cross);
  ring_allgather_phase(c, tag, local, a.out, a.count, a.type);
}

}  // namespace riseml
