#include "topology_helper.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <exception>

#include "bounded_child.hpp"
#include "topology_text.hpp"

#ifndef RISEML_TOPOLOGY_HELPER_INSTALLED
#error "RISEML_TOPOLOGY_HELPER_INSTALLED (where cmake --install puts riseml-topology) must be defined"
#endif

namespace riseml::placement {
namespace {

// A topology as text is a few hundred KB even for big nodes.
constexpr std::size_t max_text = 16u << 20;
constexpr char helper_prefix[] = "riseml-topology: ";

// Bytes from the helper's stderr, made fit for a log line: printable ASCII only, bounded.
std::string printable(std::string_view s, std::size_t max = 300) {
  std::string out;
  for (const char c : s) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    out += (c >= 0x20 && c <= 0x7e) ? c : '?';
  }
  return out;
}

// The helper's own message (its last "riseml-topology: ..." line), else the first line it wrote.
std::string helper_message(const std::string& err, bool& ours) {
  ours = false;
  std::string message;
  std::size_t pos = 0;
  while (pos < err.size()) {
    std::size_t nl = err.find('\n', pos);
    if (nl == std::string::npos) nl = err.size();
    const std::string_view line(err.data() + pos, nl - pos);
    if (line.substr(0, sizeof helper_prefix - 1) == helper_prefix) {
      message = printable(line.substr(sizeof helper_prefix - 1));
      ours = true;
    } else if (!ours && message.empty() && line.find_first_not_of(' ') != std::string_view::npos) {
      message = printable(line);
    }
    pos = nl + 1;
  }
  return message;
}

std::string signal_name(int sig) {
  const char* d = sigdescr_np(sig);
  return "signal " + std::to_string(sig) + (d != nullptr ? std::string(", ") + d : std::string());
}

std::string seconds(std::chrono::milliseconds t) {
  const auto ms = t.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

std::string check_command(const std::string& xml_path) {
  return xml_path.empty() ? "`riseml-plan --tasks 1`" : "`riseml-plan --topology " + xml_path + " --tasks 1`";
}

// What to do when hwloc could not give a topology (an error, a crash, no answer in time).
std::string hwloc_fix(const std::string& xml_path) {
  return xml_path.empty()
             ? "check this node with " + check_command(xml_path) +
                   " and lstopo, or set topology= in plugstack.conf to an export made with `lstopo --of xml`"
             : "check it with " + check_command(xml_path) + ", or regenerate it with `lstopo --of xml` on a node " +
                   "of this type; then fix topology= in plugstack.conf (a file readable by every user), or run " +
                   "with --riseml-bind=none";
}

std::string mismatch_fix(const HelperRun& run) {
  return "spank_riseml.so, riseml-plan and " + run.helper +
         " must come from the same riseml build: reinstall riseml on this node, or fix topology_helper= in "
         "plugstack.conf";
}

bool fail(TopologyProblem& problem, std::string what, std::string fix) {
  problem.what = std::move(what);
  problem.fix = std::move(fix);
  return false;
}

bool interpret(const HelperRun& run, const std::string& xml_path, ChildResult& r, NodeTopology& out,
               std::string* text, TopologyProblem& problem) {
  const std::string name = topology_name(xml_path);
  using Ending = ChildResult::Ending;
  switch (r.ending) {
    case Ending::not_started:
      return fail(problem, "cannot run the topology helper " + run.helper + ": " + std::strerror(r.error),
                  "install riseml on this node (cmake --install puts riseml-topology into " +
                      installed_topology_helper().substr(0, installed_topology_helper().rfind('/')) +
                      "), or point topology_helper= in plugstack.conf at it");
    case Ending::lost:
      return fail(problem, "lost track of " + run.helper + " reading " + name + " (waitpid: " +
                               std::strerror(r.error) + ")",
                  "check it with " + check_command(xml_path) + "; this may be a bug in riseml");
    case Ending::timed_out:
      return fail(problem,
                  "reading " + name + " took longer than " + seconds(run.timeout) + " (" + run.helper + " killed)",
                  "check it with " + check_command(xml_path) +
                      "; if this node is only slow to read, raise topology_timeout= in plugstack.conf" +
                      (xml_path.empty() ? ", or set topology= to an export made with `lstopo --of xml`" : ""));
    case Ending::too_much_output:
      return fail(problem, run.helper + " printed more than " + std::to_string(max_text >> 20) + " MiB for " + name,
                  mismatch_fix(run));
    case Ending::signaled:
      return fail(problem,
                  "hwloc crashed reading " + name + " (" + signal_name(r.signal) + ", in " + run.helper + ")",
                  hwloc_fix(xml_path));
    case Ending::exited:
      break;
  }
  bool ours = false;
  const std::string message = helper_message(r.err, ours);
  if (r.exit_code == 1 && ours) return fail(problem, message, hwloc_fix(xml_path));
  if (r.exit_code != 0) {
    return fail(problem,
                run.helper + " failed reading " + name + " (exit status " + std::to_string(r.exit_code) +
                    (message.empty() ? "" : ": " + message) + ")",
                r.exit_code == 1 ? hwloc_fix(xml_path) : mismatch_fix(run));
  }
  NodeTopology topology;
  std::string error;
  if (!parse_topology_text(r.out, topology, error)) {
    return fail(problem, run.helper + " gave no usable topology for " + name + " (" + error + ")", mismatch_fix(run));
  }
  topology.source = xml_path.empty() ? "this node" : xml_path;
  out = std::move(topology);
  if (text != nullptr) *text = std::move(r.out);
  return true;
}

}  // namespace

std::string topology_name(const std::string& xml_path) {
  return xml_path.empty() ? "this node's topology" : xml_path;
}

std::string installed_topology_helper() { return RISEML_TOPOLOGY_HELPER_INSTALLED; }

std::string choose_topology_helper(const std::string& configured, const std::string& beside_dir) {
  if (!configured.empty()) return configured;
  if (!beside_dir.empty()) {
    const std::string beside = beside_dir + "/riseml-topology";
    // Effective ids: slurmstepd runs user_init with only those switched to the user.
    if (faccessat(AT_FDCWD, beside.c_str(), X_OK, AT_EACCESS) == 0) return beside;
  }
  return installed_topology_helper();
}

bool topology_from_helper(const HelperRun& run, const std::string& xml_path, NodeTopology& out, std::string* text,
                          TopologyProblem& problem) noexcept {
  try {
    std::vector<std::string> argv{run.helper};
    if (!xml_path.empty()) argv.push_back(xml_path);
    ChildLimits limits;
    limits.timeout = run.timeout;
    limits.max_stdout = max_text;
    ChildResult r = run_bounded(argv, limits);
    return interpret(run, xml_path, r, out, text, problem);
  } catch (const std::exception& e) {
    problem.what = std::string("reading the topology failed: ") + e.what();
    problem.fix = "this is a bug in riseml, or the node is out of memory";
  } catch (...) {
    problem.what = "reading the topology failed";
    problem.fix = "this is a bug in riseml";
  }
  return false;
}

}  // namespace riseml::placement
