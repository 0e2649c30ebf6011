// The collective algorithms, each written in exchange() steps over a Group of ranks. They
// reduce with the kernels straight out of the received segments and never allocate beyond the
// context's scratch. Every block of an allreduce result is computed by exactly one rank and
// copied to the others, so all ranks end with the same bits.
#pragma once

#include <riseml/datatype.hpp>
#include <riseml/reduce_kernels.hpp>

#include <cstddef>
#include <span>

#include "../core/context.hpp"
#include "../transport/call_tag.hpp"
#include "blocks.hpp"

namespace riseml {

struct ReduceArgs {
  const std::byte* in;
  std::byte* out;  // may equal in
  std::size_t count;
  DataType type;
  ReduceOp op;     // average reduces as sum and divides by `divisor`
  // Average: every element of the result is divided by this once, on the rank that completes
  // it and while it is in cache (the ring: each rank its own block, as the last reduce-scatter
  // step reduces it; halving-doubling: the piece each rank keeps) instead of in a pass over the
  // whole result on every rank afterwards. 1: no division. Every rank gets the same bits as a
  // division after the sum would give.
  int divisor = 1;
};

// Divides `count` elements at `data` by a.divisor (nothing when it is 1).
inline void divide_result(const ReduceArgs& a, std::byte* data, std::size_t count) {
  if (a.divisor != 1 && count) kernels::divide(a.type, data, count, a.divisor);
}

// Pipelined ring: reduce-scatter then allgather; bandwidth-optimal for large messages.
void ring_allreduce(Context& c, const CallTag& tag, Group g, const ReduceArgs& a);
// The two phases, reusable by the hierarchical algorithm. After the first, `out` holds block
// (index + 1) % size fully reduced; the second spreads every rank's block to all.
void ring_reduce_scatter_phase(Context& c, const CallTag& tag, Group g, const ReduceArgs& a);
void ring_allgather_phase(Context& c, const CallTag& tag, Group g, std::byte* out,
                          std::size_t count, DataType type);

// Recursive halving (reduce-scatter) and doubling (allgather), folding the ranks beyond the
// largest power of two in first; log2(n) steps, for small messages.
void halving_doubling_allreduce(Context& c, const CallTag& tag, Group g, const ReduceArgs& a);

// Every rank sends its whole input to every other at once and adds all inputs up in rank
// order: one exchange, for calls whose blocks are too small for the others to pay.
void direct_allreduce(Context& c, const CallTag& tag, Group g, const ReduceArgs& a);

// Inside each host by ring (shared memory), across hosts by ring among the ranks with the same
// local index, inside again. Needs the same number of ranks on every host.
void hierarchical_allreduce(Context& c, const CallTag& tag, const ReduceArgs& a);

// Block `rank` of a count-elements-per-rank reduce-scatter lands in `out`.
void ring_reduce_scatter(Context& c, const CallTag& tag, Group g, const ReduceArgs& a);
// The same with blocks.count(b) elements for member b (`in` holds all blocks back to back);
// block g.index lands in `out`. Average reduces as sum (the caller divides).
void ring_reduce_scatterv(Context& c, const CallTag& tag, Group g, const std::byte* in,
                          std::byte* out, const Blocks& blocks, DataType type, ReduceOp op);

// All-to-all by pairwise exchange: send.count(b) elements to member b, recv.count(b) from it,
// both laid out in member order; `in` and `out` must not overlap. The counts must agree (the
// caller checks): with `skip_empty`, pairs with nothing to move exchange no message at all.
void pairwise_alltoallv(Context& c, const CallTag& tag, Group g, const std::byte* in,
                        const Blocks& send, std::byte* out, const Blocks& recv, DataType type,
                        bool skip_empty);
// Throws CollectiveError(mismatch) on every member, naming the first pair of ranks whose counts
// disagree, unless send_counts[r] on every member i equals recv_counts[i] on member r. One
// 8-byte allreduce when they agree.
void check_alltoallv_counts(Context& c, const CallTag& tag, Group g,
                            std::span<const std::size_t> send_counts,
                            std::span<const std::size_t> recv_counts);

// Adasum of floating point tensors laid out back to back (tensor_counts elements each) by
// recursive halving and doubling, folding the ranks beyond the largest power of two in first.
void adasum_allreduce(Context& c, const CallTag& tag, Group g, const std::byte* in,
                      std::byte* out, std::span<const std::size_t> tensor_counts, DataType type);

void ring_allgatherv(Context& c, const CallTag& tag, Group g, const std::byte* in,
                     std::byte* out, std::span<const std::size_t> counts, DataType type);

void binomial_broadcast(Context& c, const CallTag& tag, Group g, std::byte* buffer,
                        std::size_t bytes, int root_index);

void dissemination_barrier(Context& c, const CallTag& tag, Group g);

// The one-step forms of the three, for small messages among few ranks (a rank sends to every
// other at once): see Communicator's choices.
void direct_allgatherv(Context& c, const CallTag& tag, Group g, const std::byte* in,
                       std::byte* out, const Blocks& blocks, DataType type);
void direct_broadcast(Context& c, const CallTag& tag, Group g, std::byte* buffer,
                      std::size_t bytes, int root_index);
void direct_barrier(Context& c, const CallTag& tag, Group g);

// Where block b of `count` elements split in `parts` starts (balanced, element-aligned).
inline std::size_t block_start(std::size_t count, int parts, int b) {
  return static_cast<std::size_t>((static_cast<unsigned __int128>(count) * static_cast<unsigned>(b)) /
                                  static_cast<unsigned>(parts));
}

}  // namespace riseml
