// Every topology x several task counts: the plan riseml-plan prints (JSON) must equal the
// reviewed file in expected/ (see expected/README.md; regenerate_expected.sh rewrites them).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "plan_format.hpp"
#include "planner.hpp"
#include "topology_corpus.hpp"

namespace riseml::placement::test {
namespace {

std::vector<unsigned> task_counts(const NodeTopology& topo) {
  std::set<unsigned> counts{1, 2, 4, 8};
  if (topo.gpus.size() > 8) counts.insert(static_cast<unsigned>(topo.gpus.size()));
  return {counts.begin(), counts.end()};
}

void check_against_expected(const std::string& name, const std::string& path, std::set<std::string>& seen) {
  const NodeTopology& topo = load_cached(path);
  for (unsigned n : task_counts(topo)) {
    const std::string file = name + ".tasks" + std::to_string(n) + ".json";
    seen.insert(file);
    SCOPED_TRACE(file);
    StepFacts facts;
    facts.local_tasks = n;
    const std::string got = plans_to_json(make_plan(topo, facts, PlanOptions{}));
    const std::string want_path = std::string(RISEML_EXPECTED_DIR) + "/" + file;
    if (!std::filesystem::exists(want_path)) {
      ADD_FAILURE() << "no expected plan " << want_path
                    << ": run tests/spank_plugin/regenerate_expected.sh, then review the new file";
      continue;
    }
    EXPECT_EQ(read_file(want_path), got) << "plan for " << path << " with " << n
                                         << " tasks changed; if intended, regenerate and review";
  }
}

TEST(ExpectedPlans, TopologyFolderIsThere) { EXPECT_EQ(corpus_problem(), ""); }

TEST(ExpectedPlans, EveryTopologyEveryTaskCount) {
  ASSERT_EQ(corpus_problem(), "");
  std::set<std::string> seen;
  for (const auto& [name, path] : corpus_files()) check_against_expected(name, path, seen);
  check_against_expected("testbed-fixture", RISEML_FIXTURE_TOPOLOGY, seen);
  // No stale files: every expected plan belongs to a topology that is still there.
  for (const auto& entry : std::filesystem::directory_iterator(RISEML_EXPECTED_DIR)) {
    if (entry.path().extension() != ".json") continue;
    EXPECT_TRUE(seen.count(entry.path().filename().string()) != 0)
        << entry.path() << " matches no topology and task count: delete it or restore the topology";
  }
}

}  // namespace
}  // namespace riseml::placement::test
