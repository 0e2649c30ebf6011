#include "process_set.hpp"

#include <algorithm>

namespace riseml::runtime {

bool ProcessSet::has_member(int rank) const {
  return std::binary_search(ranks.begin(), ranks.end(), rank);
}

std::shared_ptr<ProcessSet> set_up_process_set(Rendezvous& job, int rank, std::vector<int> ranks,
                                               const CommunicatorOptions& communicator,
                                               const engine::EngineOptions& engine) {
  auto set = std::make_shared<ProcessSet>();
  set->ranks = std::move(ranks);
  if (set->has_member(rank)) {
    set->rendezvous = std::make_unique<SubsetRendezvous>(job, set->ranks);
    set->engine = std::make_unique<engine::Engine>(*set->rendezvous, communicator, engine);
  } else {
    Communicator::stand_by(job, communicator);
  }
  return set;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

}  // namespace riseml::runtime
