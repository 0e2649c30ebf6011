#include "finisher.hpp"

#include <memory>

namespace riseml::engine {

void Finisher::finish(TableEntry& g, const std::optional<CollectiveError>& error) {
  std::shared_ptr<HandleState> h = end_entry(g, error.has_value());
  if (h) {
    if (error)
      h->fail(*error);
    else
      h->complete();
  }
}

void Finisher::finish_all(const std::vector<TableEntry*>& entries) {
  handles_.clear();
  for (TableEntry* g : entries)
    if (std::shared_ptr<HandleState> h = end_entry(*g, false); h && h->settle(std::nullopt))
      handles_.push_back(std::move(h));
  for (const auto& h : handles_) h->wake();
  handles_.clear();
}

std::shared_ptr<HandleState> Finisher::finish_deferred(TableEntry& g) { return end_entry(g, false); }

std::shared_ptr<HandleState> Finisher::end_entry(TableEntry& g, bool failed) {
  std::shared_ptr<HandleState> h;
  // Only this rank's part of the entry: a request of the same name that this rank has not sent
  // yet (still incoming) is another submission, which the next cycle negotiates on its own.
  if (g.metas[static_cast<std::size_t>(rank_)]) h = queue_.remove(g.name);
  const TensorMeta* ref = nullptr;
  for (const auto& m : g.metas)
    if (m) ref = &*m;
  if (!failed && ref && ref->kind != OpKind::barrier)  // remember it: next time 4 bytes
    negotiator_.cache().remember(g.name, g.metas);
  negotiator_.table().close(g.name);
  g.metas.clear();  // marks it finished; erased from the table after this cycle
  return h;
}

}  // namespace riseml::engine
