// libFuzzer target riseml-fuzz-topology: loading a node topology and planning on it, the way
// spank_riseml.so does in slurmstepd. An input that starts with "riseml-topology " is helper
// output: our strict parser reads it in this process (slurmstepd reads whatever the helper
// prints), a topology it accepts must be written back byte for byte, and is planned. Anything
// else is the admin's XML: written to a file and read through the real riseml-topology (hwloc
// in a child process with a time limit, as in the plugin), then planned.
// Contract beyond the sanitizers: no crash or hang here whatever hwloc does; a refused input
// has a message naming the file and a fix; the planner gives one plan per task inside the
// topology, or a PlanError; a sanitizer report from the helper is a finding too.
// Built by tests/fuzz/CMakeLists.txt; run with tests/fuzz/run.sh BUILD_DIR SECONDS topology.
// Without RISEML_FUZZ the same entry point replays the seeds as a test (replay_main.cpp).
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "plan_format.hpp"
#include "planner.hpp"
#include "read_topology.hpp"
#include "topology_text.hpp"

namespace {

namespace pl = riseml::placement;

// The helper is an instrumented build too. Its sanitizer reports end it with this status
// (a crash inside hwloc stays a plain signal, which read_topology reports as usual).
constexpr int helper_sanitizer_exit = 86;

void check(bool ok, const char* what, const std::string& detail = "") {
  if (ok) return;
  std::fprintf(stderr, "riseml-fuzz-topology: contract broken: %s\n%s\n", what, detail.c_str());
  std::abort();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The file an XML input is written to, in a folder of its own, removed at exit.
class Scratch {
 public:
  Scratch() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/riseml-fuzz-topology.XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    check(mkdtemp(buf.data()) != nullptr, "mkdtemp", pattern);
    dir_ = buf.data();
    file_ = dir_ + "/node.xml";
  }
  ~Scratch() {
    std::remove(file_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& file() const { return file_; }

 private:
  std::string dir_, file_;
};

const std::string& scratch_file() {
  static const Scratch scratch;
  return scratch.file();
}

// Steps shaped like real ones: all of the node, a few tasks on some GPUs, a part of the CPUs.
void plan_on(const pl::NodeTopology& topo) {
  std::set<unsigned> known;
  for (const auto& c : topo.cores) known.insert(c.pus.begin(), c.pus.end());
  std::vector<unsigned> half;
  for (unsigned pu : known) {
    if (half.size() * 2 < known.size()) half.push_back(pu);
  }
  std::vector<pl::StepFacts> steps(4);
  steps[1].local_tasks = 4;
  steps[2].local_tasks = 3;
  steps[2].gpus = std::vector<unsigned>{1, 0};
  steps[2].gpu_names = {"GPU-b", ""};
  steps[2].cpus = half;
  steps[3].local_tasks = 2;
  steps[3].gpus = std::vector<unsigned>{};
  steps[3].cpus = std::vector<unsigned>{0, 1, 4096};
  pl::PlanOptions uuid_without_first_nic;
  uuid_without_first_nic.gpu_ids = pl::GpuIds::uuid;
  if (!topo.nics.empty()) uuid_without_first_nic.nic_exclude = {topo.nics.front().name};
  for (const auto& facts : steps) {
    for (const pl::PlanOptions& options : {pl::PlanOptions{}, uuid_without_first_nic}) {
      try {
        const auto plans = pl::make_plan(topo, facts, options);
        check(plans.size() == facts.local_tasks, "one plan per task");
        for (const auto& p : plans) {
          for (unsigned g : p.gpu_indices) check(g < topo.gpus.size(), "GPU index inside the topology");
          for (unsigned c : p.cpus) check(known.count(c) != 0, "CPUs of the topology only");
          for (const auto& [name, value] : p.env) check(value.find('\0') == std::string::npos, "no NUL in", name);
          pl::one_line(p);
        }
        pl::plans_to_json(plans);
        pl::plans_to_table(plans);
      } catch (const pl::PlanError& e) {
        check(e.what()[0] != '\0', "a PlanError says why");
      }
    }
  }
}

void helper_text(const std::string& text) {
  pl::NodeTopology topo;
  std::string error;
  if (!pl::parse_topology_text(text, topo, error)) {
    check(error.rfind("line ", 0) == 0, "errors name the line", error);
    return;
  }
  check(pl::write_topology_text(topo) == text, "what the parser accepts is exactly what the writer writes", text);
  plan_on(topo);
}

void admin_xml(const std::string& xml) {
  const std::string path = scratch_file();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << xml;
    check(static_cast<bool>(out), "writing the scratch file", path);
  }
  pl::TopologySource source{path, pl::HelperRun{RISEML_TOPOLOGY_HELPER, std::chrono::seconds(5)}, ""};
  pl::NodeTopology topo;
  pl::TopologyProblem problem;
  std::vector<std::string> notes;
  if (!pl::read_topology(source, topo, problem, notes)) {
    check(!has(problem.what, "(exit status " + std::to_string(helper_sanitizer_exit)),
          "riseml-topology reported a sanitizer error (rerun it on the input to see it)", problem.what);
    check(has(problem.what, path) && !problem.fix.empty(), "a refusal names the file and a fix",
          problem.what + "; " + problem.fix);
    return;
  }
  check(topo.source == path, "the topology names its file");
  plan_on(topo);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // For the helper only (this process has read its options already).
  const std::string code = std::to_string(helper_sanitizer_exit);
  setenv("ASAN_OPTIONS", ("handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0:exitcode=" + code).c_str(), 1);
  setenv("UBSAN_OPTIONS", ("halt_on_error=1:exitcode=" + code).c_str(), 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  if (input.rfind("riseml-topology ", 0) == 0) {
    helper_text(input);
  } else {
    admin_xml(input);
  }
  return 0;
}
