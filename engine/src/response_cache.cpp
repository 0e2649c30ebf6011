#include "response_cache.hpp"

namespace riseml::engine {

std::optional<std::uint32_t> ResponseCache::id_of(const std::string& name, int rank,
                                                   const TensorMeta& meta) const {
  return find(name, rank, [&](const TensorMeta& m) { return m == meta; });
}

std::optional<std::uint32_t> ResponseCache::id_of(const std::string& name, int rank,
                                                   const Request& r) const {
  return find(name, rank, [&](const TensorMeta& m) { return describes(m, r); });
}

void ResponseCache::remember(const std::string& name,
                             const std::vector<MetaRef>& metas) {
  auto it = index_.find(name);
  if (it != index_.end()) {
    // A training loop finishes the same tensors with the same metadata every step, sent as
    // this entry's id: the same objects, equal at once (and a copy would only count references).
    if (entries_[it->second].metas != metas) entries_[it->second].metas = metas;
  } else if (entries_.size() < capacity_) {
    index_.emplace(name, static_cast<std::uint32_t>(entries_.size()));
    entries_.push_back({name, metas});
  }
}

}  // namespace riseml::engine
