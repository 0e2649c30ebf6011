#include "response_cache.hpp"

namespace riseml::engine {

std::optional<std::uint32_t> ResponseCache::id_of(const std::string& name, int rank,
                                                   const Request& r) const {
  auto it = index_.find(name);
  if (it == index_.end()) return std::nullopt;
  const MetaRef& mine = entries_[it->second].metas[static_cast<std::size_t>(rank)];
  if (!mine || !describes(*mine, r)) return std::nullopt;
  return it->second;
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
