// Horovod's six rank numbers of one process, defined once for the three places that hand them
// out: spank_riseml.so (HOROVOD_* for a task of a Slurm step), riseml-launch (HOROVOD_* for its
// ranks) and the runtime (hvd.rank() ... hvd.cross_size()).
//
// Horovod's local communicator holds a node's processes; its cross communicator holds the
// processes with the same local rank, one per node that has that many: cross size = the number
// of nodes with more than `local_rank` processes, cross rank = how many of those nodes come
// before this one. Nodes are in the job's order (Slurm's node index, PMIx's node id), which is
// the order of their global ranks for block, cyclic and plane distributions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace riseml {

struct HorovodCross {
  std::uint32_t rank = 0;
  std::uint32_t size = 1;
};

// The cross rank and size of local rank `local_rank` on node `node`, where node n runs
// tasks_per_node[n] processes. nullopt when the facts contradict each other (no such node, or
// the node has no process of that local rank).
std::optional<HorovodCross> horovod_cross(std::span<const std::uint32_t> tasks_per_node,
                                          std::uint32_t node, std::uint32_t local_rank);

// Processes per node from every rank's node index (node_of_rank[r] in [0, nodes)); nullopt
// when an index is out of range.
std::optional<std::vector<std::uint32_t>> tasks_per_node(std::span<const int> node_of_rank, int nodes);

struct HorovodRanks {
  std::uint32_t rank = 0, size = 1;
  std::uint32_t local_rank = 0, local_size = 1;
  std::optional<HorovodCross> cross;  // unknown: the two cross variables are left out
};

// HOROVOD_RANK, HOROVOD_SIZE, HOROVOD_LOCAL_RANK, HOROVOD_LOCAL_SIZE, then HOROVOD_CROSS_RANK
// and HOROVOD_CROSS_SIZE when the cross numbers are known: name and value, in that order.
std::vector<std::pair<std::string, std::string>> horovod_variables(const HorovodRanks& ranks);

// The six names, in the order horovod_variables gives them.
const std::vector<std::string>& horovod_variable_names();

}  // namespace riseml
