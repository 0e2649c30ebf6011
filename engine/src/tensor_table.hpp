// The negotiation's table: every name some rank submitted and that has not finished, with each
// rank's metadata once that rank sent it. Every rank builds the same table from the same
// messages, so whatever is decided from it (ready, mismatched, stalled) is decided alike.
// Entries are kept in order of first appearance (a sequence number), which is the order in
// which ready entries run.
#pragma once

#include "meta_ref.hpp"
#include "wire.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace riseml::engine {

struct TableEntry {
  using Clock = std::chrono::steady_clock;
  std::string name;
  // One per rank; empty once the entry finished (it is erased after the cycle).
  std::vector<MetaRef> metas;
  Clock::time_point first_seen;
  bool warned = false;        // the stall warning was given
  bool verdict_sent = false;  // rank 0 decided it fails (stall or deadlock)

  bool finished() const { return metas.empty(); }
};

// The metadata of the first rank that sent some; throws CollectiveError(system) if none did.
const TensorMeta& reference(const TableEntry& entry);

class TensorTable {
 public:
  using Clock = std::chrono::steady_clock;
  using Entries = std::map<std::uint64_t, TableEntry>;

  explicit TensorTable(int size) : size_(size) {}
  TensorTable(const TensorTable&) = delete;  // the index refers to the entries' names
  TensorTable& operator=(const TensorTable&) = delete;

  // Rank `rank`'s metadata for `name`: into the open entry of that name, or a new one.
  void record(const std::string& name, int rank, MetaRef meta, Clock::time_point now);
  // The open entry of that name if it has sequence number `seq`, else null.
  TableEntry* find(const std::string& name, std::uint64_t seq);
  // The name is free for a new entry (the entry itself stays, finished, until erase_finished).
  void close(const std::string& name);
  // Erases the finished entries; whether there were any.
  bool erase_finished();
  bool empty() const { return entries_.empty(); }

  Entries::iterator begin() { return entries_.begin(); }
  Entries::iterator end() { return entries_.end(); }
  Entries::const_iterator begin() const { return entries_.begin(); }
  Entries::const_iterator end() const { return entries_.end(); }

 private:
  int size_;
  Entries entries_;
  // The open entry of each name, keyed by the entry's own name (entries do not move in the
  // map, and close() comes before an entry is erased).
  using Index = std::unordered_map<std::string_view, std::uint64_t>;
  Index index_;
  std::uint64_t next_seq_ = 0;
  // Erased entries and index slots, reused with what they allocated (the name, the per-rank
  // metadata): a training step's tensors come again every step, and need no allocation then.
  static constexpr std::size_t kSpare = 4096;
  std::vector<Entries::node_type> spare_entries_;
  std::vector<Index::node_type> spare_slots_;
};

}  // namespace riseml::engine
