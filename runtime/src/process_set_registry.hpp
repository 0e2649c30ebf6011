// The process sets of one generation by id (1, 2, ...; 0, the whole job, is not in it), and the
// errors a lookup gives. Not thread-safe: the runtime guards it.
#pragma once

#include "process_set.hpp"

#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace riseml::runtime {

class ProcessSetRegistry {
 public:
  // The id the next set gets; take_next_id() uses it up.
  int next_id() const { return next_id_; }
  int take_next_id() { return next_id_++; }

  void add(int id, std::shared_ptr<ProcessSet> set);
  // Null when there is no such set.
  std::shared_ptr<ProcessSet> remove(int id);
  // Throws CollectiveError(invalid_argument) when there is no such set.
  std::shared_ptr<ProcessSet> find(int id) const;
  // The set's engine on `rank`; throws CollectiveError(invalid_argument) when there is no such
  // set or `rank` is not a member. Shares the set's ownership (removal leaves it valid).
  std::shared_ptr<engine::Engine> engine_of(int id, int rank) const;
  // The id of a set with exactly these (sorted) ranks.
  std::optional<int> id_of(const std::vector<int>& ranks) const;
  std::vector<int> ids() const;
  // Every set, taken out; numbering starts again at 1.
  std::map<int, std::shared_ptr<ProcessSet>> take_all();

 private:
  std::map<int, std::shared_ptr<ProcessSet>> sets_;
  int next_id_ = 1;
};

}  // namespace riseml::runtime
