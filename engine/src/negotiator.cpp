#include "negotiator.hpp"

#include <riseml/collective_error.hpp>

#include <algorithm>
#include <array>
#include <cstring>

namespace riseml::engine {

namespace {

// Bytes per rank in the first exchange of a cycle: an 8-byte size, then the message if it fits
// (flags, and up to about 45 cached tensors).
constexpr std::size_t kSlotBytes = 256;

}  // namespace

Negotiator::Negotiator(Communicator& comm, int rank, int size)
    : comm_(comm),
      rank_(rank),
      size_(size),
      table_(size),
      joined_(static_cast<std::size_t>(size), false),
      stuck_(static_cast<std::size_t>(size), false) {}

bool Negotiator::any_joined() const {
  return std::any_of(joined_.begin(), joined_.end(), [](bool j) { return j; });
}

bool Negotiator::all_joined() const {
  return std::all_of(joined_.begin(), joined_.end(), [](bool j) { return j; });
}

void Negotiator::offer(Message& mine, const Request& r) const {
  WireEntry& e = mine.entries.emplace_back();
  if (const auto id = cache_.id_of(r.name, rank_, r)) {
    e.cached = true;
    e.cache_id = *id;
  } else {
    e.name = r.name;
    e.meta = meta_of(r);
  }
}

CycleNews Negotiator::exchange(const Message& mine) {
  // Everyone's messages: the fixed slots (the size, then the message when it fits), and the
  // allgatherv only when one does not fit.
  const std::vector<std::byte> bytes = encode(mine);
  std::vector<std::byte> slots(kSlotBytes * static_cast<std::size_t>(size_));
  {
    std::array<std::byte, kSlotBytes> slot{};
    const std::uint64_t n = bytes.size();
    std::memcpy(slot.data(), &n, sizeof n);
    if (bytes.size() <= kSlotBytes - sizeof n)
      std::memcpy(slot.data() + sizeof n, bytes.data(), bytes.size());
    comm_.allgather(slot.data(), slots.data(), kSlotBytes, DataType::uint8);
  }
  std::vector<std::size_t> counts(static_cast<std::size_t>(size_));
  bool all_inline = true;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    std::uint64_t n;
    std::memcpy(&n, slots.data() + r * kSlotBytes, sizeof n);
    counts[r] = static_cast<std::size_t>(n);
    all_inline = all_inline && n <= kSlotBytes - sizeof n;
  }
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;
  std::vector<std::byte> all(total);
  if (all_inline) {
    std::size_t at = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      std::memcpy(all.data() + at, slots.data() + r * kSlotBytes + sizeof(std::uint64_t), counts[r]);
      at += counts[r];
    }
  } else {
    comm_.allgatherv(bytes.data(), all.data(), counts, DataType::uint8);
  }
  CycleNews news;
  news.now = std::chrono::steady_clock::now();

  // The same table on every rank.
  std::size_t offset = 0;
  for (int r = 0; r < size_; ++r) {
    const auto ur = static_cast<std::size_t>(r);
    Message m = decode(all.data() + offset, counts[ur], r);
    offset += counts[ur];
    if (m.shutdown && news.shutdown_by < 0) {
      news.shutdown_by = r;
      news.shutdown_leaving = m.leaving;
    }
    stuck_[ur] = m.stuck;
    if (m.join) {
      joined_[ur] = true;
      last_joined_ = r;
    }
    if (r == 0) news.verdicts = std::move(m.stalled);
    for (WireEntry& e : m.entries) {
      if (!e.cached) {
        table_.record(e.name, r, MetaRef(std::move(e.meta)), news.now);
        continue;
      }
      const CachedResponse* c = cache_.at(e.cache_id);
      if (!c || !c->metas[ur])
        throw CollectiveError(ErrorKind::mismatch,
                              "riseml: engine: rank " + std::to_string(r) +
                                  " referred to an unknown cache entry",
                              r);
      table_.record(c->name, r, c->metas[ur], news.now);  // shared, not copied
    }
  }
  return news;
}

bool Negotiator::awaits(int rank) const {
  for (const auto& [seq, g] : table_)
    if (!g.finished() && !g.metas[static_cast<std::size_t>(rank)]) return true;
  return false;
}

}  // namespace riseml::engine
