#include "read_topology.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>

#include "topology_cache.hpp"
#include "topology_text.hpp"

namespace riseml::placement {
namespace {

std::string file_fix() {
  return "fix topology= in plugstack.conf (a file readable by every user), or run with --riseml-bind=none";
}

// Opens the file as the caller (the user, in slurmstepd) without blocking on a FIFO, and gives
// its identity; the helper reads it only if this works.
bool check_file(const std::string& path, std::string& identity, TopologyProblem& problem) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    problem = {"cannot read topology file " + path + ": " + std::strerror(errno), file_fix()};
    return false;
  }
  struct stat st;
  const bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (regular) identity = file_identity(fd);
  close(fd);
  if (!regular) {
    problem = {"topology file " + path + " is not a regular file", file_fix()};
    return false;
  }
  return true;
}

std::string hostname() {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  return host;
}

}  // namespace

bool read_topology(const TopologySource& source, NodeTopology& out, TopologyProblem& problem,
                   std::vector<std::string>& notes) noexcept {
  try {
    const std::string& path = source.xml_path;
    std::string identity;
    if (!path.empty() && !check_file(path, identity, problem)) return false;
    const bool cached = !path.empty() && !source.cache_base.empty();
    const TopologyCache cache(source.cache_base);
    const std::string slot = hostname() + "\n" + path;
    // The helper's identity too: a new riseml may read the same file differently.
    const std::string key = slot + "\n" + identity + "\nhelper=" + source.helper.helper + " " +
                            file_identity(source.helper.helper);
    std::string note;
    if (cached) {
      if (auto text = cache.find(slot, key, note)) {
        NodeTopology topology;
        std::string error;
        if (parse_topology_text(*text, topology, error)) {
          topology.source = path;
          out = std::move(topology);
          notes.push_back("topology of " + path + " from the cache in " + cache.folder());
          return true;
        }
        note = "the cache entry for " + path + " is unreadable (" + error + ")";
      }
      if (!note.empty()) notes.push_back(note);
    }
    std::string text;
    if (!topology_from_helper(source.helper, path, out, cached ? &text : nullptr, problem)) return false;
    // Only what was read from the file we identified (it may have changed meanwhile).
    if (cached && file_identity(path) == identity) {
      note.clear();
      if (cache.store(slot, key, text, note)) {
        notes.push_back("topology of " + path + " read by " + source.helper.helper + ", cached in " + cache.folder());
      } else {
        notes.push_back(note);
      }
    }
    return true;
  } catch (const std::exception& e) {
    problem = {std::string("reading the topology failed: ") + e.what(), "this node may be out of memory"};
  } catch (...) {
    problem = {"reading the topology failed", "this is a bug in riseml"};
  }
  return false;
}

}  // namespace riseml::placement
