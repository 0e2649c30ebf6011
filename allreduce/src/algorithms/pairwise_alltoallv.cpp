// Pairwise all-to-all: in step k = 1 .. m-1 rank i sends its block for i + k and receives the
// block of i - k at the same time, straight into its place in `out`; its own block is moved
// locally. Every pair of ranks meets in exactly one step each way, so no link carries two
// blocks of one call. Across hosts the steps run one after another (no link is flooded);
// among the ranks of one host they all run at once, as they are ready.
//
// Large blocks between processes of one host move by single copy instead (see
// single_copy.hpp), which halves the copying: the sender offers the block's address, the
// receiver reads it straight from the sender's `in` into `out` and answers, and the sender
// returns only once every reader has answered. Offers and answers are small and wait for
// nobody, so they are not taken pairwise but as they come: the offers all go out first, before
// this rank moves its own block; then the pairwise steps carry the ordinary blocks; then each
// offer is read and answered as it arrives, and the answers are collected as they arrive. A
// rank that is not scheduled yet (more ranks than cores) holds up only the reads of its own
// block. A refused read is answered so, and the block then travels the ordinary way, pairwise.
// Both ranks of a pair decide alike, from the block's size and the link's kind, and every
// link carries its messages in the order they are taken: offer or block, answer, block again.
#include <unistd.h>

#include <cstring>
#include <limits>

#include <riseml/reduce_kernels.hpp>
#include "../transport/exchange.hpp"
#include "../transport/single_copy.hpp"
#include "algorithms.hpp"
#include "streaming_rule.hpp"

namespace riseml {

namespace {

// From this block size up the copy saved outweighs the offer, the answer and the system call,
// which costs about twice a memcpy per byte on the development VM: from 16 KiB when every rank
// of the host has a core (the shorter chain of steps wins: 2 ranks, 16 KiB blocks, 0.94-0.99 of
// Open MPI per call against 0.75-0.93 through the slots), from 32 KiB when the host runs more
// ranks than it has CPUs (then CPU time wins: 4 ranks on 2 cores, 16 KiB blocks, back to back
// 1.33-1.36 of Open MPI through the slots against 0.82-0.85). The option single_copy_bytes
// (RISEML_SINGLE_COPY_BYTES) overrides both (0: never). Both ranks of a pair must decide alike
// (else the call fails as a mismatch), so this depends only on what they share: the host's CPUs
// and its ranks.
constexpr std::size_t kSingleCopyBytes = 16 << 10;
constexpr std::size_t kSingleCopyBytesOversubscribed = 32 << 10;

std::size_t single_copy_bytes(const CommunicatorOptions& options, int local_ranks) {
  if (const auto forced = options.single_copy_bytes)
    return *forced == 0 ? std::numeric_limits<std::size_t>::max() : *forced;
  // All the host's CPUs, not this process's affinity (which differs between ranks).
  static const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  return local_ranks > cpus ? kSingleCopyBytesOversubscribed : kSingleCopyBytes;
}

template <class T>
const std::byte* bytes_of(const T& x) {
  return reinterpret_cast<const std::byte*>(&x);
}

template <class T>
std::byte* bytes_of(T& x) {
  return reinterpret_cast<std::byte*>(&x);
}

}  // namespace

void pairwise_alltoallv(Context& c, const CallTag& tag, Group g, const std::byte* in,
                        const Blocks& send, std::byte* out, const Blocks& recv, DataType type,
                        bool skip_empty) {
  const int m = g.size();
  const int i = g.index;
  const std::size_t esize = element_size(type);
  auto member = [&](int b) { return ((b % m) + m) % m; };
  auto send_bytes = [&](int to) { return send.count(to) * esize; };
  auto recv_bytes = [&](int from) { return recv.count(from) * esize; };
  auto send_data = [&](int to) { return in + send.start(to) * esize; };
  auto recv_into = [&](int from) { return out + recv.start(from) * esize; };
  const std::size_t threshold = single_copy_bytes(c.options(), c.local().size());
  auto single_copy = [&](int peer, std::size_t bytes) {
    return bytes >= threshold && std::strcmp(c.link(g.at(peer)).kind(), "shm") == 0;
  };
  auto offered = [&](int to) { return single_copy(to, send_bytes(to)); };
  auto taken = [&](int from) { return single_copy(from, recv_bytes(from)); };
  // A block that is empty, when the counts are known to agree, needs no message at all.
  auto sends = [&](int to) { return !offered(to) && !(skip_empty && send_bytes(to) == 0); };
  auto receives = [&](int from) { return !taken(from) && !(skip_empty && recv_bytes(from) == 0); };

  // 1. The offers. `check` stays here, where the readers look for it, until they have answered.
  std::uint64_t check = 0;
  bool any_single_copy = false;
  for (int k = 1; k < m; ++k) {
    const int to = member(i + k);
    any_single_copy |= offered(to) || taken(member(i - k));
    if (!offered(to)) continue;
    if (check == 0) check = single_copy_check();
    const SingleCopyOffer offer{reinterpret_cast<std::uintptr_t>(send_data(to)), send_bytes(to),
                                reinterpret_cast<std::uintptr_t>(&check), check};
    exchange(c, tag, {g.at(to), bytes_of(offer), sizeof offer}, {});
  }
  if (const std::size_t own = recv_bytes(i); own) {
    // A large own block is written once and not read again here: non-temporal stores save the
    // read-for-ownership of every line (the copy is memory-bound), when the blocks do not overlap.
    std::byte* to = recv_into(i);
    const std::byte* from = send_data(i);
    const std::size_t footprint = c.local().size() * (send.start(m) + recv.start(m)) * esize;
    if (streaming_pays(c.options(), own, footprint) && (to + own <= from || from + own <= to))
      kernels::streaming_copy(to, from, own);
    else
      std::memmove(to, from, own);
  }

  // 2. The ordinary blocks: between ranks of one host all at once (no rank waits for the peer
  // of a step while another could move: more ranks than cores), across hosts pairwise. Each
  // link carries one block each way either way, so the two sides need not choose alike.
  auto local = [&](int peer) { return std::strcmp(c.link(g.at(peer)).kind(), "shm") == 0; };
  auto step_send = [&](std::size_t k) {
    const int to = member(i + static_cast<int>(k));
    if (k == 0 || !sends(to) || !local(to)) return SendSpec{};
    return SendSpec{g.at(to), send_data(to), send_bytes(to)};
  };
  auto step_recv = [&](std::size_t k) {
    const int from = member(i - static_cast<int>(k));
    if (k == 0 || !receives(from) || !local(from)) return RecvSpec{};
    return RecvSpec{g.at(from), recv_bytes(from), recv_into(from), {}};
  };
  exchange_all(c, tag, static_cast<std::size_t>(m), step_send, step_recv);
  for (int k = 1; k < m; ++k) {
    const int to = member(i + k), from = member(i - k);
    const bool send_now = sends(to) && !local(to), receive_now = receives(from) && !local(from);
    if (!send_now && !receive_now) continue;
    exchange(c, tag, {send_now ? g.at(to) : -1, send_data(to), send_bytes(to)},
             {receive_now ? g.at(from) : -1, recv_bytes(from), recv_into(from), {}});
  }
  if (!any_single_copy) return;

  // 3. The offered blocks, read as their offers arrive and answered at once (1: read). Step k's
  // offer comes from i - k and the answer to i + k; both live in scratch, one per step.
  const auto steps = static_cast<std::size_t>(m);
  std::byte* state = c.scratch(steps * (sizeof(SingleCopyOffer) + 2), 0);
  auto* offers = reinterpret_cast<SingleCopyOffer*>(state);
  auto* read = reinterpret_cast<std::uint8_t*>(state + steps * sizeof(SingleCopyOffer));
  std::uint8_t* answer = read + steps;
  auto from_of = [&](std::size_t k) { return member(i - static_cast<int>(k)); };
  auto to_of = [&](std::size_t k) { return member(i + static_cast<int>(k)); };
  auto offer_spec = [&](std::size_t k) {
    const int from = from_of(k);
    if (k == 0 || !taken(from)) return RecvSpec{};
    return RecvSpec{g.at(from), sizeof(SingleCopyOffer), bytes_of(offers[k]), {}};
  };
  auto read_and_answer = [&](std::size_t k) {
    const int from = from_of(k);
    read[k] = offers[k].bytes == recv_bytes(from) &&
              single_copy_read(c.peer(g.at(from)).pid, offers[k], recv_into(from));
    exchange(c, tag, {g.at(from), bytes_of(read[k]), 1}, {});
  };
  receive_each(c, tag, steps, offer_spec, read_and_answer);

  // 4. The answers: this rank returns (and lets `in` change) only once its readers are done.
  auto answer_spec = [&](std::size_t k) {
    const int to = to_of(k);
    if (k == 0 || !offered(to)) return RecvSpec{};
    return RecvSpec{g.at(to), 1, bytes_of(answer[k]), {}};
  };
  auto nothing = [](std::size_t) {};
  receive_each(c, tag, steps, answer_spec, nothing);

  // 5. Refused reads: those blocks the ordinary way, pairwise.
  for (int k = 1; k < m; ++k) {
    const auto s = static_cast<std::size_t>(k);
    const bool resend = offered(to_of(s)) && !answer[s];
    const bool receive_again = taken(from_of(s)) && !read[s];
    if (resend || receive_again)
      exchange(c, tag, {resend ? g.at(to_of(s)) : -1, send_data(to_of(s)), send_bytes(to_of(s))},
               {receive_again ? g.at(from_of(s)) : -1, recv_bytes(from_of(s)),
                recv_into(from_of(s)), {}});
  }
}

}  // namespace riseml
