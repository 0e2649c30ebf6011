// The variables riseml-launch gives each rank on top of PMIx's: Horovod's HOROVOD_RANK,
// HOROVOD_SIZE, HOROVOD_LOCAL_RANK, HOROVOD_LOCAL_SIZE, HOROVOD_CROSS_RANK and
// HOROVOD_CROSS_SIZE, which Horovod scripts read before init(). riseml-launch sets them
// unconditionally, replacing inherited values, as horovodrun does for its workers: a value
// inherited from an outer job (riseml-launch inside an srun task) would name the wrong rank.
#pragma once

#include <string>
#include <vector>

namespace riseml::launch {

// The six names, in the order horovod_rank_variables lists them.
const std::vector<std::string>& horovod_rank_variable_names();

// "NAME=value" for rank `rank` of a job of `ranks` ranks that all run on this one node: local
// rank = rank, local size = ranks, cross rank 0 (the only node), cross size 1 (one rank has each
// local rank). Horovod's cross size is the number of ranks with this rank's local rank, its
// cross rank this rank's index among them.
std::vector<std::string> horovod_rank_variables(int rank, int ranks);

}  // namespace riseml::launch
