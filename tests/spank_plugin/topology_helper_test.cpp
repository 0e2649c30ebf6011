// Reading a topology through riseml-topology: the real helper gives exactly what hwloc gives in
// process, and every way a helper can fail (fake helpers: scripts) becomes a message naming
// the file and a fix; the file is checked (readable, a regular file) before any helper runs.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <string>
#include <vector>

#include "read_topology.hpp"
#include "scratch_folder.hpp"
#include "topology_corpus.hpp"
#include "topology_helper.hpp"

namespace riseml::placement::test {
namespace {

using namespace std::chrono_literals;

const std::string real_helper = RISEML_TOPOLOGY_HELPER;
const std::string fixture = RISEML_FIXTURE_TOPOLOGY;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TopologyProblem fails_with(const std::string& helper, const std::string& xml, std::chrono::milliseconds timeout = 10s) {
  NodeTopology out;
  TopologyProblem problem;
  std::string text = "untouched";
  EXPECT_FALSE(topology_from_helper(HelperRun{helper, timeout}, xml, out, &text, problem));
  EXPECT_EQ(text, "untouched");
  EXPECT_FALSE(problem.what.empty());
  EXPECT_FALSE(problem.fix.empty());
  return problem;
}

TEST(TopologyHelper, GivesWhatHwlocGivesInProcess) {
  ASSERT_EQ(corpus_problem(), "");
  auto files = corpus_files();
  files["testbed-fixture"] = fixture;
  for (const auto& [name, path] : files) {
    NodeTopology via_helper;
    TopologyProblem problem;
    std::string text;
    ASSERT_TRUE(topology_from_helper(HelperRun{real_helper, 60s}, path, via_helper, &text, problem))
        << name << ": " << problem.what << "; " << problem.fix;
    EXPECT_EQ(via_helper, load_cached(path)) << name;
    EXPECT_EQ(via_helper.source, path);
    EXPECT_EQ(text.rfind("riseml-topology 1\n", 0), 0u);
  }
}

TEST(TopologyHelper, ReadsThisNodeToo) {
  NodeTopology node;
  TopologyProblem problem;
  ASSERT_TRUE(topology_from_helper(HelperRun{real_helper, 60s}, "", node, nullptr, problem)) << problem.what;
  EXPECT_EQ(node.source, "this node");
  EXPECT_FALSE(node.cores.empty());
}

TEST(TopologyHelper, OddNumbersInAnExportAreNotUsed) {
  // Found by riseml-fuzz-topology: hwloc keeps whatever number the XML gives.
  const std::string dir = RISEML_TOPOLOGY_REGRESSIONS;
  NodeTopology odd_type, odd_speed;
  TopologyProblem problem;
  ASSERT_TRUE(topology_from_helper(HelperRun{real_helper, 60s}, dir + "/osdev-type-out-of-range.xml", odd_type, nullptr,
                                   problem))
      << problem.what;
  for (const auto& i : odd_type.netifs) EXPECT_NE(i.name, "eth0") << "osdev_type=8 is no network device";
  EXPECT_EQ(odd_type.netifs.size(), load_cached(fixture).netifs.size() - 1);
  ASSERT_TRUE(topology_from_helper(HelperRun{real_helper, 60s}, dir + "/link-speed-not-a-number.xml", odd_speed, nullptr,
                                   problem))
      << problem.what;
  for (const auto& i : odd_speed.netifs) {
    EXPECT_EQ(i.link_speed, i.name == "ib0" ? load_cached(fixture).netifs[1].link_speed : 0.0) << i.name;
  }
}

TEST(TopologyHelper, ACrashNamesTheFileAndTheFix) {
  ScratchFolder s;
  const std::string helper = s.script("crash.sh", "kill -SEGV $$");
  TopologyProblem p = fails_with(helper, fixture);
  EXPECT_EQ(p.what, "hwloc crashed reading " + fixture + " (signal 11, Segmentation fault, in " + helper + ")");
  EXPECT_TRUE(has(p.fix, "riseml-plan --topology " + fixture + " --tasks 1")) << p.fix;
  EXPECT_TRUE(has(p.fix, "lstopo --of xml")) << p.fix;
  EXPECT_TRUE(has(p.fix, "fix topology= in plugstack.conf")) << p.fix;
  p = fails_with(helper, "");
  EXPECT_EQ(p.what, "hwloc crashed reading this node's topology (signal 11, Segmentation fault, in " + helper + ")");
  EXPECT_TRUE(has(p.fix, "set topology= in plugstack.conf")) << p.fix;
}

TEST(TopologyHelper, AHangIsKilledAtTheTimeLimit) {
  ScratchFolder s;
  const std::string helper = s.script("hang.sh", "exec sleep 600");
  const auto start = std::chrono::steady_clock::now();
  const TopologyProblem p = fails_with(helper, fixture, 500ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(p.what, "reading " + fixture + " took longer than 500 ms (" + helper + " killed)");
  EXPECT_TRUE(has(p.fix, "raise topology_timeout= in plugstack.conf")) << p.fix;
  EXPECT_EQ(fails_with(helper, "", 1s).what, "reading this node's topology took longer than 1 s (" + helper + " killed)");
}

TEST(TopologyHelper, GarbageOrAFloodIsABuildMismatch) {
  ScratchFolder s;
  const std::string garbage = s.script("garbage.sh", "echo 'Segmentation fault (core dumped)'");
  TopologyProblem p = fails_with(garbage, fixture);
  EXPECT_EQ(p.what, garbage + " gave no usable topology for " + fixture +
                        " (line 1: not riseml-topology output (want 'riseml-topology 1' first))");
  EXPECT_TRUE(has(p.fix, "must come from the same riseml build")) << p.fix;
  const std::string cut = s.script("cut.sh", "printf 'riseml-topology 1\\ncore pus=0 path=1\\n'");
  EXPECT_TRUE(has(fails_with(cut, fixture).what, "no 'end' record (output cut short?)"));
  const std::string newer = s.script("newer.sh", "printf 'riseml-topology 2\\n'");
  EXPECT_TRUE(has(fails_with(newer, fixture).what, "format version '2', this riseml reads 1"));
  const std::string flood = s.script("flood.sh", "exec yes riseml-topology");
  p = fails_with(flood, fixture, 60s);
  EXPECT_EQ(p.what, flood + " printed more than 16 MiB for " + fixture);
}

TEST(TopologyHelper, ItsOwnErrorMessageIsPassedOn) {
  ScratchFolder s;
  const std::string helper =
      s.script("err.sh", "echo 'hwloc/xml: noise' >&2; echo \"riseml-topology: hwloc could not load $1\" >&2; exit 1");
  const TopologyProblem p = fails_with(helper, fixture);
  EXPECT_EQ(p.what, "hwloc could not load " + fixture);
  EXPECT_TRUE(has(p.fix, "lstopo --of xml")) << p.fix;
}

TEST(TopologyHelper, OtherExitStatusesSayWhatCameOut) {
  ScratchFolder s;
  const std::string helper = s.script("args.sh", "printf 'got %s: %s\\001\\n' \"$#\" \"$1\" >&2; exit 3");
  EXPECT_EQ(fails_with(helper, fixture).what, helper + " failed reading " + fixture + " (exit status 3: got 1: " +
                                                  fixture + "?)");
  EXPECT_EQ(fails_with(helper, "").what, helper + " failed reading this node's topology (exit status 3: got 0: ?)");
  const std::string silent = s.script("silent.sh", "exit 2");
  const TopologyProblem p = fails_with(silent, fixture);
  EXPECT_EQ(p.what, silent + " failed reading " + fixture + " (exit status 2)");
  EXPECT_TRUE(has(p.fix, "must come from the same riseml build")) << p.fix;
}

TEST(TopologyHelper, AMissingHelperSaysHowToInstallIt) {
  const TopologyProblem p = fails_with("/nonexistent/riseml-topology", fixture);
  EXPECT_EQ(p.what, "cannot run the topology helper /nonexistent/riseml-topology: No such file or directory");
  EXPECT_TRUE(has(p.fix, "cmake --install")) << p.fix;
  EXPECT_TRUE(has(p.fix, "topology_helper= in plugstack.conf")) << p.fix;
}

TEST(TopologyHelper, WhichHelperRuns) {
  ScratchFolder s;
  EXPECT_EQ(choose_topology_helper("/opt/x/riseml-topology", s.path()), "/opt/x/riseml-topology");
  EXPECT_EQ(choose_topology_helper("", s.path()), installed_topology_helper());
  EXPECT_EQ(choose_topology_helper("", ""), installed_topology_helper());
  s.file("riseml-topology", "not executable");
  EXPECT_EQ(choose_topology_helper("", s.path()), installed_topology_helper());
  const std::string beside = s.script("riseml-topology", "exit 0");
  EXPECT_EQ(choose_topology_helper("", s.path()), beside);
  const std::string installed = installed_topology_helper();
  EXPECT_EQ(installed.front(), '/');
  EXPECT_TRUE(installed.size() > 16 && installed.substr(installed.size() - 16) == "/riseml-topology") << installed;
}

TEST(ReadTopology, TheFileIsCheckedBeforeAnyHelperRuns) {
  ScratchFolder s;
  const std::string never = s.script("never.sh", "touch " + s.path() + "/ran; kill -SEGV $$");
  const std::string fifo = s.path() + "/node.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  struct Case {
    std::string path, what;
  };
  for (const Case& c : std::vector<Case>{
           {"/nonexistent/node.xml", "cannot read topology file /nonexistent/node.xml: No such file or directory"},
           {s.path(), "topology file " + s.path() + " is not a regular file"},
           {fifo, "topology file " + fifo + " is not a regular file"},  // and does not block on open
       }) {
    NodeTopology out;
    TopologyProblem problem;
    std::vector<std::string> notes;
    EXPECT_FALSE(read_topology(TopologySource{c.path, HelperRun{never, 10s}, ""}, out, problem, notes));
    EXPECT_EQ(problem.what, c.what);
    EXPECT_EQ(problem.fix, "fix topology= in plugstack.conf (a file readable by every user), or run with "
                           "--riseml-bind=none");
  }
  struct stat st;
  EXPECT_NE(stat((s.path() + "/ran").c_str(), &st), 0) << "the helper ran";
}

}  // namespace
}  // namespace riseml::placement::test
