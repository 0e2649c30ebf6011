#include "process_set_registry.hpp"

#include <string>
#include <utility>

namespace riseml::runtime {

void ProcessSetRegistry::add(int id, std::shared_ptr<ProcessSet> set) {
  sets_.emplace(id, std::move(set));
}

std::shared_ptr<ProcessSet> ProcessSetRegistry::remove(int id) {
  auto node = sets_.extract(id);
  return node ? std::move(node.mapped()) : nullptr;
}

std::shared_ptr<ProcessSet> ProcessSetRegistry::find(int id) const {
  auto it = sets_.find(id);
  if (it == sets_.end())
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml: process set " + std::to_string(id) + " is not registered");
  return it->second;
}

std::shared_ptr<engine::Engine> ProcessSetRegistry::engine_of(int id, int rank) const {
  auto it = sets_.find(id);
  if (it == sets_.end())
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml: process set " + std::to_string(id) +
                              " is not registered (removed, or never added); add it with "
                              "add_process_set() on every rank");
  const std::shared_ptr<ProcessSet>& set = it->second;
  if (!set->engine)
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml: rank " + std::to_string(rank) + " is not in process set " +
                              std::to_string(id) + " (ranks " + rank_list(set->ranks) +
                              "); only its members may use it");
  return std::shared_ptr<engine::Engine>(set, set->engine.get());
}

std::optional<int> ProcessSetRegistry::id_of(const std::vector<int>& ranks) const {
  for (const auto& [id, set] : sets_)
    if (set->ranks == ranks) return id;
  return std::nullopt;
}

std::vector<int> ProcessSetRegistry::ids() const {
  std::vector<int> ids;
  for (const auto& [id, set] : sets_) ids.push_back(id);
  return ids;
}

std::map<int, std::shared_ptr<ProcessSet>> ProcessSetRegistry::take_all() {
  next_id_ = 1;
  return std::exchange(sets_, {});
}

}  // namespace riseml::runtime
