#include "tensor_table.hpp"

#include <riseml/collective_error.hpp>

namespace riseml::engine {

const TensorMeta& reference(const TableEntry& entry) {
  for (const auto& m : entry.metas)
    if (m) return *m;
  throw CollectiveError(ErrorKind::system,
                        "riseml: engine: entry '" + entry.name + "' has no metadata");
}

void TensorTable::record(const std::string& name, int rank, TensorMeta&& meta,
                         Clock::time_point now) {
  auto [it, inserted] = index_.try_emplace(name, next_seq_);
  if (inserted) {
    TableEntry entry;
    entry.name = name;
    entry.metas.resize(static_cast<std::size_t>(size_));
    entry.first_seen = now;
    entries_.emplace(next_seq_++, std::move(entry));
  }
  entries_.at(it->second).metas[static_cast<std::size_t>(rank)] = std::move(meta);
}

TableEntry* TensorTable::find(const std::string& name, std::uint64_t seq) {
  auto it = index_.find(name);
  if (it == index_.end() || it->second != seq) return nullptr;
  return &entries_.at(seq);
}

bool TensorTable::erase_finished() {
  bool erased = false;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.finished()) {
      erased = true;
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  return erased;
}

}  // namespace riseml::engine
