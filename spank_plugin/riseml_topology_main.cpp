// riseml-topology: the one program of riseml that lets hwloc read a topology (this node, or an
// exported XML file) and prints what the planner needs as text (topology_text.hpp). hwloc can
// crash or hang on a malformed XML; here that ends this process only, and spank_riseml.so and
// riseml-plan, which start it (read_topology.cpp), report it. Not meant to be run by hand, but
// harmless: `riseml-topology [FILE.xml]`.
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "hwloc_loader.hpp"
#include "topology_text.hpp"

namespace {

// slurmstepd calls user_init with only its effective ids switched to the user; the real ids
// stay root, so this process could switch back. Become the user for good before reading
// anything an admin or a user wrote.
bool drop_saved_root() {
  const gid_t egid = getegid();
  const uid_t euid = geteuid();
  if (getgid() != egid && setresgid(egid, egid, egid) != 0) return false;
  if (getuid() != euid && setresuid(euid, euid, euid) != 0) return false;
  return true;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "riseml-topology: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
    std::fprintf(stderr, "usage: riseml-topology [FILE.xml]   (spank_riseml.so and riseml-plan run it)\n");
    return 2;
  }
  try {
    // A crash inside hwloc must not leave a core file (the working directory is / anyway).
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    if (!drop_saved_root()) return fail(std::string("cannot drop the saved root ids: ") + std::strerror(errno));
    riseml::placement::NodeTopology topology;
    std::string error;
    if (!riseml::placement::load_topology(argc == 2 ? argv[1] : "", topology, error)) return fail(error);
    const std::string text = riseml::placement::write_topology_text(topology);
    // hwloc accepts some nonsense (a CPU in two cores): check here, with the reader's own parser,
    // so that the message blames the file and not a mismatch between riseml builds.
    riseml::placement::NodeTopology check;
    if (!riseml::placement::parse_topology_text(text, check, error)) {
      const std::size_t colon = error.find(": ");
      return fail("hwloc read " + topology.source + ", but what it found is not a usable topology: " +
                  (colon == std::string::npos ? error : error.substr(colon + 2)) + " (a damaged export?)");
    }
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
      return fail(std::string("cannot write the topology: ") + std::strerror(errno));
    }
    return 0;
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what());
  }
}
