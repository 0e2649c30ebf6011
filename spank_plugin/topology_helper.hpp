// Reads a node's topology by running the riseml-topology helper (hwloc in its own process) and
// parsing what it prints (topology_text.hpp). Every way the helper can fail - missing, crashed,
// too slow, garbage, too much output, an hwloc error - becomes a message naming the file and
// what to do about it.
#pragma once

#include <chrono>
#include <string>

#include "node_topology.hpp"

namespace riseml::placement {

struct TopologyProblem {
  std::string what;  // "hwloc crashed reading /etc/riseml/node.xml (signal 11, ...)"
  std::string fix;   // "check it with `riseml-plan --topology ...`, or ..."
};

struct HelperRun {
  std::string helper;  // absolute path of riseml-topology
  std::chrono::milliseconds timeout{30000};
};

// xml_path empty: this node. On success `out` holds the topology (source set) and, when asked
// for, `text` what the helper printed (for the cache). Never throws.
bool topology_from_helper(const HelperRun& run, const std::string& xml_path, NodeTopology& out,
                          std::string* text, TopologyProblem& problem) noexcept;

// Which riseml-topology to run: the configured one; else one beside the running program or
// plugin (a build tree keeps them together); else the installed one (baked in at build time).
std::string choose_topology_helper(const std::string& configured, const std::string& beside_dir);
std::string installed_topology_helper();

// "this node's topology" or the file: how messages name what was read.
std::string topology_name(const std::string& xml_path);

}  // namespace riseml::placement
