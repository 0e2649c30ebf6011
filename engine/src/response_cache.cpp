#include "response_cache.hpp"

namespace riseml::engine {

std::optional<std::uint32_t> ResponseCache::id_of(const std::string& name, int rank,
                                                   const TensorMeta& meta) const {
  auto it = index_.find(name);
  if (it == index_.end() || entries_[it->second].metas[static_cast<std::size_t>(rank)] != meta)
    return std::nullopt;
  return it->second;
}

void ResponseCache::remember(const std::string& name,
                             const std::vector<std::optional<TensorMeta>>& metas) {
  auto it = index_.find(name);
  if (it != index_.end()) {
    // A training loop finishes the same tensors with the same metadata every step: compare
    // (no allocation) before copying.
    if (entries_[it->second].metas != metas) entries_[it->second].metas = metas;
  } else if (entries_.size() < capacity_) {
    index_.emplace(name, static_cast<std::uint32_t>(entries_.size()));
    entries_.push_back({name, metas});
  }
}

}  // namespace riseml::engine
