// Malformed topologies: the files in bad_topologies/ (three of which crash hwloc 2.9 in the
// process that loads them) and a few hundred mutations of real ones (cut short, an attribute
// dropped, a digit changed, a line doubled or dropped) give a message naming the file, both
// through read_topology and from riseml-plan, and never crash the caller.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bounded_child.hpp"
#include "read_topology.hpp"
#include "scratch_folder.hpp"
#include "topology_corpus.hpp"

namespace riseml::placement::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string bad_dir = RISEML_BAD_TOPOLOGY_DIR;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// What each file must say (after the file's path, which every message names). hwloc 2.9
// crashes on the first three; a later hwloc may refuse them instead, which is fine too.
const std::map<std::string, std::vector<std::string>> expected = {
    {"pu-without-nodeset.xml", {"hwloc crashed reading ", "hwloc could not load ", "hwloc cannot use "}},
    {"pu-without-nodeset-minimal.xml", {"hwloc crashed reading ", "hwloc could not load ", "hwloc cannot use "}},
    {"pu-without-complete-cpuset.xml", {"hwloc crashed reading ", "hwloc could not load ", "hwloc cannot use "}},
    {"cpu-in-two-cores.xml", {"hwloc read "}},
    {"truncated.xml", {"hwloc cannot use ", "hwloc could not load "}},
    {"not-xml.xml", {"hwloc cannot use ", "hwloc could not load "}},
    {"empty.xml", {"hwloc cannot use ", "hwloc could not load "}},
};

TEST(BadTopologies, EachIsAMessageNamingTheFile) {
  std::size_t seen = 0;
  for (const auto& entry : fs::directory_iterator(bad_dir)) {
    if (entry.path().extension() != ".xml") continue;
    ++seen;
    const std::string path = entry.path().string(), name = entry.path().filename().string();
    ASSERT_TRUE(expected.count(name)) << "add " << name << " to the table in this test (and to README.md)";
    NodeTopology out;
    TopologyProblem problem;
    std::vector<std::string> notes;
    EXPECT_FALSE(read_topology(TopologySource{path, HelperRun{RISEML_TOPOLOGY_HELPER, 30s}, ""}, out, problem, notes))
        << name;
    bool matched = false;
    for (const auto& start : expected.at(name)) matched = matched || problem.what.rfind(start + path, 0) == 0;
    EXPECT_TRUE(matched) << name << ": " << problem.what;
    EXPECT_TRUE(has(problem.fix, "lstopo --of xml")) << name << ": " << problem.fix;
    EXPECT_TRUE(has(problem.fix, "riseml-plan --topology " + path)) << name << ": " << problem.fix;
    std::printf("%s: %s\n", name.c_str(), problem.what.c_str());
  }
  EXPECT_EQ(seen, expected.size());
}

// Deterministic mutations of an XML text, like an admin's damaged copy.
class Mutator {
 public:
  explicit Mutator(unsigned seed) : rng_(seed) {}
  std::string operator()(std::string s, int kind) {
    const int ops = pick(1, 3);
    for (int i = 0; i < ops && !s.empty(); ++i) {
      switch (kind) {
        case 0: s.resize(static_cast<std::size_t>(pick(0, static_cast<int>(s.size()) - 1))); break;
        case 1: drop_attribute(s); break;
        case 2: change_digit(s); break;
        case 3: double_line(s, false); break;
        default: double_line(s, true); break;
      }
    }
    return s;
  }
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

 private:
  void drop_attribute(std::string& s) {  // ' name="value"'
    std::vector<std::pair<std::size_t, std::size_t>> attrs;
    for (std::size_t i = s.find(' '); i != std::string::npos; i = s.find(' ', i + 1)) {
      std::size_t j = i + 1;
      while (j < s.size() && ((s[j] >= 'a' && s[j] <= 'z') || s[j] == '_')) ++j;
      if (j == i + 1 || s.compare(j, 2, "=\"") != 0) continue;
      const std::size_t end = s.find('"', j + 2);
      if (end != std::string::npos) attrs.emplace_back(i, end + 1 - i);
    }
    if (attrs.empty()) return;
    const auto [at, len] = attrs[static_cast<std::size_t>(pick(0, static_cast<int>(attrs.size()) - 1))];
    s.erase(at, len);
  }
  void change_digit(std::string& s) {
    std::vector<std::size_t> digits;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] >= '0' && s[i] <= '9') digits.push_back(i);
    }
    if (!digits.empty()) s[digits[static_cast<std::size_t>(pick(0, static_cast<int>(digits.size()) - 1))]] = static_cast<char>('0' + pick(0, 9));
  }
  void double_line(std::string& s, bool drop) {
    std::vector<std::size_t> starts{0};
    for (std::size_t i = 0; i + 1 < s.size(); ++i) {
      if (s[i] == '\n') starts.push_back(i + 1);
    }
    const std::size_t k = static_cast<std::size_t>(pick(0, static_cast<int>(starts.size()) - 1));
    const std::size_t end = k + 1 < starts.size() ? starts[k + 1] : s.size();
    const std::string line = s.substr(starts[k], end - starts[k]);
    if (drop) {
      s.erase(starts[k], line.size());
    } else {
      s.insert(starts[k], line);
    }
  }
  std::mt19937 rng_;
};

TEST(BadTopologies, MutatedTopologiesNeverCrashRisemlPlan) {
  ASSERT_EQ(corpus_problem(), "");
  const auto corpus = corpus_files();
  std::vector<std::string> sources = {read_file(RISEML_FIXTURE_TOPOLOGY)};
  for (const char* name : {"hwloc-2socket-pci-wholeio", "psmgmt-jwb0004"}) {
    ASSERT_TRUE(corpus.count(name)) << name << " is missing from " << topology_dir();
    sources.push_back(read_file(corpus.at(name)));
  }
  ScratchFolder s;
  Mutator mutate(11);
  constexpr int count = 300;
  int planned = 0, refused = 0, crashed_hwloc = 0;
  for (int i = 0; i < count; ++i) {
    const std::string& source = sources[static_cast<std::size_t>(mutate.pick(0, static_cast<int>(sources.size()) - 1))];
    const std::string xml = s.file("m" + std::to_string(i) + ".xml", mutate(source, mutate.pick(0, 4)));
    ChildLimits limits;
    limits.timeout = 120s;
    const ChildResult r = run_bounded({RISEML_PLAN_PROGRAM, "--topology", xml, "--tasks", "2"}, limits);
    ASSERT_EQ(r.ending, ChildResult::Ending::exited)
        << xml << ": riseml-plan did not exit normally (signal " << r.signal << ")\n" << r.err;
    if (r.exit_code == 0) {
      ++planned;
      EXPECT_TRUE(has(r.out, "RISEML_PLAN=task=1 ")) << xml << "\n" << r.out;
      continue;
    }
    ++refused;
    EXPECT_EQ(r.exit_code, 1) << xml << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("riseml-plan: ", 0), 0u) << xml << "\n" << r.err;
    EXPECT_TRUE(has(r.err, xml)) << "the message does not name the file:\n" << r.err;
    if (has(r.err, "hwloc crashed reading ")) ++crashed_hwloc;
  }
  std::printf("%d mutated topologies: %d planned, %d refused with a message (%d of them crashed hwloc in "
              "riseml-topology), none crashed riseml-plan\n",
              count, planned, refused, crashed_hwloc);
  RecordProperty("crashed_hwloc", crashed_hwloc);
}

}  // namespace
}  // namespace riseml::placement::test
