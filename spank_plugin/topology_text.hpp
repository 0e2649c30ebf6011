// A NodeTopology as text: what the riseml-topology helper prints and spank_riseml.so and
// riseml-plan read back (and what the topology cache keeps). hwloc parses the admin's XML in the
// helper process only; this small format of our own is all that crosses into slurmstepd, so its
// parser is strict: anything the writer would not have written is an error naming the line.
//
//   riseml-topology 1
//   core pus=0,8 path=1,2,4,11
//   numa index=0 pus=0,1,8,9
//   gpu bus=0000:07:00.0 vendor=nvidia uuid=GPU-... os=cuda0 local=0,1,8,9 order=0 path=1,2,30,31
//   nic name=mlx5_0 bus=0000:08:00.0 ports=1 netdevs=ib0 path=1,2,30,40
//   netif name=ib0 ipoib=1 speed=24.6 path=1,2,30,40
//   end
//
// Records come in that order (cores, NUMA nodes, GPUs, NICs, interfaces), each key once and in
// that order. Lists are comma-separated (empty: nothing after '='), numbers plain decimal. In
// names, bytes outside '!'..'~', '%' and ',' are written %XX (upper-case hex).
#pragma once

#include <string>
#include <string_view>

#include "node_topology.hpp"

namespace riseml::placement {

inline constexpr int topology_text_version = 1;

// Everything but `source`, which the reader sets (it knows what it asked for). Names that are
// empty inside a list (a netdev without a name) cannot be written: the loader drops them.
std::string write_topology_text(const NodeTopology& topology);

// Returns false with "line N: ..." in `error` for anything else than the writer's output; `out`
// is untouched then. Never throws.
bool parse_topology_text(std::string_view text, NodeTopology& out, std::string& error) noexcept;

}  // namespace riseml::placement
