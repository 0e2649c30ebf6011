#include "topology_corpus.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hwloc_loader.hpp"

namespace fs = std::filesystem;

namespace riseml::placement::test {

std::string topology_dir() {
  const char* env = std::getenv("RISEML_TOPOLOGY_DIR");
  return env != nullptr && *env != '\0' ? env : RISEML_TOPOLOGY_DIR_DEFAULT;
}

std::map<std::string, std::string> corpus_files() {
  std::map<std::string, std::string> files;
  std::error_code ec;
  if (!fs::is_directory(topology_dir(), ec)) return files;
  for (const auto& entry : fs::directory_iterator(topology_dir(), ec)) {
    if (entry.path().extension() == ".xml") files[entry.path().stem().string()] = entry.path().string();
  }
  return files;
}

std::string corpus_problem() {
  std::error_code ec;
  if (!fs::is_directory(topology_dir(), ec)) {
    return "the topology folder " + topology_dir() +
           " is missing: the placement tests need the real node exports (tests/data/topologies in "
           "the repository; set -DRISEML_TOPOLOGY_DIR=... or the environment variable RISEML_TOPOLOGY_DIR)";
  }
  if (corpus_files().empty()) return "the topology folder " + topology_dir() + " holds no .xml file";
  return {};
}

const NodeTopology& load_cached(const std::string& path) {
  static std::map<std::string, NodeTopology> cache;
  auto it = cache.find(path);
  if (it != cache.end()) return it->second;
  NodeTopology topo;
  std::string error;
  if (!load_topology(path, topo, error)) ADD_FAILURE() << "cannot load " << path << ": " << error;
  return cache.emplace(path, std::move(topo)).first->second;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace riseml::placement::test
