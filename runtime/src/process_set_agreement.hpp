// What add_process_set checks before it sets anything up: that the ranks make a set of this job,
// then that every rank of the job asked for the same set (Horovod's rule: every rank adds the
// same sets in the same order). A disagreement would otherwise hang the setup's fences.
#pragma once

#include <riseml/engine/engine.hpp>

#include <vector>

namespace riseml::runtime {

// Sorts `ranks` and checks them against a job of `size` ranks: throws
// CollectiveError(invalid_argument) for an empty set, a rank outside the job or one given twice.
std::vector<int> checked_process_set_ranks(std::vector<int> ranks, int size);

// Collective on the job's engine (one allgather, named after the set's id): throws
// CollectiveError(invalid_argument) on every rank when some rank asked for other ranks, naming
// the first such rank.
void check_every_rank_agrees(engine::Engine& job, int rank, int id, const std::vector<int>& ranks);

}  // namespace riseml::runtime
