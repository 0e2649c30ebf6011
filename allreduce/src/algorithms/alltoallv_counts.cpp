// The counts check of an all-to-all with per-rank counts, so that a disagreement fails the same
// way on every rank instead of as a size mismatch on one rank and "peer failed" elsewhere.
//
// Every pair (sender s, receiver r) with count x hashes to h(s, r, x), a bijection in x. Each
// rank adds the hashes of what it sends and subtracts those of what it expects; one 8-byte
// allreduce sums them (wrapping). Agreeing counts cancel to 0; a single disagreeing pair never
// does, several cancel by chance with odds of 2^-64 (and then the transports' size check still
// stops the call). Only when the sum is not 0 are all counts gathered, so that every rank names
// the same first disagreeing pair: the common case costs one small allreduce.
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms.hpp"

namespace riseml {

namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser: a bijection
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::uint64_t pair_hash(int from, int to, std::size_t count) {
  const std::uint64_t pair = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(from)) << 32) |
                             static_cast<std::uint32_t>(to);
  return mix(mix(pair) ^ static_cast<std::uint64_t>(count));
}

}  // namespace

void check_alltoallv_counts(Context& c, const CallTag& tag, Group g,
                            std::span<const std::size_t> send_counts,
                            std::span<const std::size_t> recv_counts) {
  static_assert(sizeof(std::size_t) == sizeof(std::int64_t));
  const int m = g.size();
  const int me = g.index;
  std::uint64_t balance = 0;
  for (int r = 0; r < m; ++r) {
    balance += pair_hash(me, r, send_counts[static_cast<std::size_t>(r)]);
    balance -= pair_hash(r, me, recv_counts[static_cast<std::size_t>(r)]);
  }
  const auto* in = reinterpret_cast<const std::byte*>(&balance);
  auto* out = reinterpret_cast<std::byte*>(&balance);
  halving_doubling_allreduce(c, tag, g, {in, out, 1, DataType::int64, ReduceOp::sum});
  if (balance == 0) return;

  // Some pair disagrees: every rank gathers every rank's send and receive counts.
  const auto row = static_cast<std::size_t>(2 * m);
  std::vector<std::size_t> mine(row), all(row * static_cast<std::size_t>(m));
  for (int r = 0; r < m; ++r) {
    mine[static_cast<std::size_t>(r)] = send_counts[static_cast<std::size_t>(r)];
    mine[static_cast<std::size_t>(m + r)] = recv_counts[static_cast<std::size_t>(r)];
  }
  const std::vector<std::size_t> rows(static_cast<std::size_t>(m), row);
  ring_allgatherv(c, tag, g, reinterpret_cast<const std::byte*>(mine.data()),
                  reinterpret_cast<std::byte*>(all.data()), rows, DataType::int64);
  auto sent = [&](int from, int to) {
    return all[static_cast<std::size_t>(from) * row + static_cast<std::size_t>(to)];
  };
  auto expected = [&](int from, int to) {
    return all[static_cast<std::size_t>(to) * row + static_cast<std::size_t>(m + from)];
  };
  int bad = 0, first_from = -1, first_to = -1;
  for (int from = 0; from < m; ++from)
    for (int to = 0; to < m; ++to)
      if (sent(from, to) != expected(from, to) && bad++ == 0) {
        first_from = from;
        first_to = to;
      }
  // A hash difference with equal counts would mean ranks gathered different data: a bug.
  if (bad == 0)
    throw CollectiveError(ErrorKind::mismatch,
                          "rank " + std::to_string(c.rank()) +
                              ": alltoallv: the ranks' counts disagree, but the gathered counts "
                              "all match (" + describe(tag) + ")");
  const int from = g.ranks[static_cast<std::size_t>(first_from)];
  const int to = g.ranks[static_cast<std::size_t>(first_to)];
  std::string what = "mismatched alltoallv counts: rank " + std::to_string(from) + " sends " +
                     std::to_string(sent(first_from, first_to)) + " elements to rank " +
                     std::to_string(to) + ", which expects " +
                     std::to_string(expected(first_from, first_to)) + " from rank " +
                     std::to_string(from);
  if (bad > 1) what += " (and " + std::to_string(bad - 1) + " more pairs disagree)";
  throw CollectiveError(ErrorKind::mismatch, what + " (" + describe(tag) + ", seen on rank " +
                                                 std::to_string(c.rank()) + ")",
                        from);
}

}  // namespace riseml
