// The topologies the placement tests run on: every XML in tests/data/topologies (a missing or
// empty folder is a test failure) and the testbed's fixture node.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "node_topology.hpp"

namespace riseml::placement::test {

std::string topology_dir();  // RISEML_TOPOLOGY_DIR, else the configured default
// File name (without .xml) -> path. Empty when the folder is missing; see corpus_problem().
std::map<std::string, std::string> corpus_files();
std::string corpus_problem();  // empty, or why the corpus is unusable
const NodeTopology& load_cached(const std::string& path);  // loads once; ADD_FAILURE on error
std::string read_file(const std::string& path);

}  // namespace riseml::placement::test
