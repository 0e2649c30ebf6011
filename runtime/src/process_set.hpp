// A process set (Horovod's name): a sub-communicator of some of the job's ranks with an engine
// of its own, so that disjoint sets negotiate and progress independently. Its communicator is
// set up through the job's rendezvous (no new bootstrap): the members over a SubsetRendezvous
// of it, while every other rank stands by for the same job-wide fences.
#pragma once

#include <riseml/engine/engine.hpp>
#include <riseml/rendezvous.hpp>
#include <riseml/subset_rendezvous.hpp>

#include <memory>
#include <string>
#include <vector>

namespace riseml::runtime {

struct ProcessSet {
  std::vector<int> ranks;  // sorted job ranks
  // Declared before the engine, which is set up over it: destroyed after it.
  std::unique_ptr<SubsetRendezvous> rendezvous;
  std::unique_ptr<engine::Engine> engine;  // null on the ranks outside the set

  bool has_member(int rank) const;
};

// Collective on every rank of the job. `options.communicator.rendezvous_prefix` must be the
// set's own.
std::shared_ptr<ProcessSet> set_up_process_set(Rendezvous& job, int rank, std::vector<int> ranks,
                                               const CommunicatorOptions& communicator,
                                               const engine::EngineOptions& engine);

// "[0, 2, 3]", for messages.
std::string rank_list(const std::vector<int>& ranks);

}  // namespace riseml::runtime
