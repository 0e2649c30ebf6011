// Reads a node's topology with hwloc (this node, or an exported XML file) into a NodeTopology.
// hwloc 2.9 can crash on a malformed XML, so only the riseml-topology helper process (and the
// tests, on known-good files) call this; the plugin and riseml-plan use read_topology.hpp.
#pragma once

#include <string>

#include "node_topology.hpp"

namespace riseml::placement {

// xml_path empty: this node. Returns false with a message in `error` (never throws).
bool load_topology(const std::string& xml_path, NodeTopology& out, std::string& error) noexcept;

// a < b with digit runs compared as numbers: mlx5_2 < mlx5_10.
bool natural_less(const std::string& a, const std::string& b);

}  // namespace riseml::placement
