// Where a step's topology comes from: the admin's topology= file (checked here, read by the
// riseml-topology helper, cached per node and file identity) or the live node (read by the
// helper every time: devices and drivers come and go without any file changing). The plugin
// and riseml-plan both read topologies only through here, so hwloc never runs in their process.
#pragma once

#include <string>
#include <vector>

#include "node_topology.hpp"
#include "topology_helper.hpp"

namespace riseml::placement {

struct TopologySource {
  std::string xml_path;    // absolute; empty: this node
  HelperRun helper;
  std::string cache_base;  // topology_cache= (e.g. /tmp); empty: no cache
};

// `notes` collects what only a debug log wants (cache hits, misses, cache problems). Never throws.
bool read_topology(const TopologySource& source, NodeTopology& out, TopologyProblem& problem,
                   std::vector<std::string>& notes) noexcept;

}  // namespace riseml::placement
