#include "tensor_table.hpp"

#include <riseml/collective_error.hpp>

namespace riseml::engine {

const TensorMeta& reference(const TableEntry& entry) {
  for (const auto& m : entry.metas)
    if (m) return *m;
  throw CollectiveError(ErrorKind::system,
                        "riseml: engine: entry '" + entry.name + "' has no metadata");
}

void TensorTable::record(const std::string& name, int rank, MetaRef meta, Clock::time_point now) {
  TableEntry* entry;
  if (auto it = index_.find(name); it != index_.end()) {
    entry = &entries_.at(it->second);
  } else {
    const std::uint64_t seq = next_seq_++;
    if (spare_entries_.empty()) {
      entry = &entries_.emplace_hint(entries_.end(), seq, TableEntry{})->second;
    } else {
      Entries::node_type node = std::move(spare_entries_.back());
      spare_entries_.pop_back();
      node.key() = seq;
      TableEntry& reused = node.mapped();
      std::string kept_name = std::move(reused.name);
      std::vector<MetaRef> kept_metas = std::move(reused.metas);
      reused = TableEntry{};  // every field as new, but what holds memory
      reused.name = std::move(kept_name);
      reused.metas = std::move(kept_metas);
      entry = &entries_.insert(entries_.end(), std::move(node))->second;
    }
    entry->name.assign(name);
    entry->metas.assign(static_cast<std::size_t>(size_), MetaRef{});
    entry->first_seen = now;
    if (spare_slots_.empty()) {
      index_.emplace(entry->name, seq);
    } else {
      Index::node_type slot = std::move(spare_slots_.back());
      spare_slots_.pop_back();
      slot.key() = entry->name;
      slot.mapped() = seq;
      index_.insert(std::move(slot));
    }
  }
  entry->metas[static_cast<std::size_t>(rank)] = std::move(meta);
}

TableEntry* TensorTable::find(const std::string& name, std::uint64_t seq) {
  auto it = index_.find(name);
  if (it == index_.end() || it->second != seq) return nullptr;
  return &entries_.at(seq);
}

void TensorTable::close(const std::string& name) {
  Index::node_type slot = index_.extract(name);
  if (slot && spare_slots_.size() < kSpare) spare_slots_.push_back(std::move(slot));
}

bool TensorTable::erase_finished() {
  bool erased = false;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.finished()) {
      erased = true;
      if (spare_entries_.size() < kSpare)
        spare_entries_.push_back(entries_.extract(it++));
      else
        it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  return erased;
}

}  // namespace riseml::engine
