// Horovod's rank variables from Slurm's task facts: every layout the cross rank and size are known
// for, and every case where they (or all six) must stay unset rather than be guessed.
#include "horovod_environment.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace riseml::spank {
namespace {

using Env = std::map<std::string, std::string>;

Env as_map(const HorovodEnvironment& h) { return Env(h.env.begin(), h.env.end()); }

// Block distribution: node n holds tasks_per_node[n] consecutive ranks.
HorovodTaskFacts block_task(const std::vector<std::uint32_t>& per_node, std::uint32_t node, std::uint32_t local,
                            const std::string& compressed) {
  HorovodTaskFacts f;
  for (std::uint32_t n = 0; n < node; ++n) f.global_id += per_node[n];
  f.global_id += local;
  for (auto c : per_node) f.total_tasks += c;
  f.local_id = local;
  f.local_tasks = per_node[node];
  f.node_id = node;
  f.nodes = static_cast<std::uint32_t>(per_node.size());
  f.tasks_per_node = compressed;
  f.distribution = "block";
  f.procid = std::to_string(f.global_id);
  return f;
}

Env want(int rank, int size, int local_rank, int local_size, int cross_rank, int cross_size) {
  return {{"HOROVOD_RANK", std::to_string(rank)},
          {"HOROVOD_SIZE", std::to_string(size)},
          {"HOROVOD_LOCAL_RANK", std::to_string(local_rank)},
          {"HOROVOD_LOCAL_SIZE", std::to_string(local_size)},
          {"HOROVOD_CROSS_RANK", std::to_string(cross_rank)},
          {"HOROVOD_CROSS_SIZE", std::to_string(cross_size)}};
}

TEST(HorovodEnvironment, OneNode) {
  HorovodTaskFacts f = block_task({4}, 0, 3, "4");
  const HorovodEnvironment h = horovod_environment(f);
  EXPECT_EQ(as_map(h), want(3, 4, 3, 4, 0, 1));
  EXPECT_EQ(h.not_set, "");
  // One node needs no per-node counts.
  f.tasks_per_node.reset();
  EXPECT_EQ(as_map(horovod_environment(f)), want(3, 4, 3, 4, 0, 1));
}

TEST(HorovodEnvironment, SetInHorovodsOrder) {
  const HorovodEnvironment h = horovod_environment(block_task({2, 2}, 1, 0, "2(x2)"));
  ASSERT_EQ(h.env.size(), 6u);
  EXPECT_EQ(h.env[0].first, "HOROVOD_RANK");
  EXPECT_EQ(h.env[5].first, "HOROVOD_CROSS_SIZE");
}

TEST(HorovodEnvironment, TwoNodesOfTwoTasks) {
  const std::vector<std::uint32_t> layout{2, 2};
  EXPECT_EQ(as_map(horovod_environment(block_task(layout, 0, 0, "2(x2)"))), want(0, 4, 0, 2, 0, 2));
  EXPECT_EQ(as_map(horovod_environment(block_task(layout, 0, 1, "2(x2)"))), want(1, 4, 1, 2, 0, 2));
  EXPECT_EQ(as_map(horovod_environment(block_task(layout, 1, 0, "2(x2)"))), want(2, 4, 0, 2, 1, 2));
  EXPECT_EQ(as_map(horovod_environment(block_task(layout, 1, 1, "2(x2)"))), want(3, 4, 1, 2, 1, 2));
}

TEST(HorovodEnvironment, UnevenNodesCountOnlyNodesWithThatLocalRank) {
  // srun -N3 -n7: 3,2,2. Local rank 2 exists on node 0 only.
  const std::vector<std::uint32_t> layout{3, 2, 2};
  EXPECT_EQ(as_map(horovod_environment(block_task(layout, 0, 2, "3,2(x2)"))), want(2, 7, 2, 3, 0, 1));
  EXPECT_EQ(as_map(horovod_environment(block_task(layout, 2, 1, "3,2(x2)"))), want(6, 7, 1, 2, 2, 3));
  EXPECT_EQ(as_map(horovod_environment(block_task(layout, 1, 0, "3,2(x2)"))), want(3, 7, 0, 2, 1, 3));
  // 1,3,2: local rank 1 lives on nodes 1 and 2, local rank 2 on node 1 only.
  const std::vector<std::uint32_t> other{1, 3, 2};
  EXPECT_EQ(as_map(horovod_environment(block_task(other, 1, 1, "1,3,2"))), want(2, 6, 1, 3, 0, 2));
  EXPECT_EQ(as_map(horovod_environment(block_task(other, 2, 1, "1,3,2"))), want(5, 6, 1, 2, 1, 2));
  EXPECT_EQ(as_map(horovod_environment(block_task(other, 1, 2, "1,3,2"))), want(3, 6, 2, 3, 0, 1));
  EXPECT_EQ(as_map(horovod_environment(block_task(other, 2, 0, "1,3,2"))), want(4, 6, 0, 2, 2, 3));
}

TEST(HorovodEnvironment, CyclicDistributionKeepsTheNodeOrder) {
  // srun -N2 -n4 -m cyclic: node 0 has ranks 0 and 2, node 1 has 1 and 3.
  HorovodTaskFacts f = block_task({2, 2}, 1, 1, "2(x2)");
  f.global_id = 3;
  f.procid = "3";
  f.distribution = "cyclic";
  EXPECT_EQ(as_map(horovod_environment(f)), want(3, 4, 1, 2, 1, 2));
}

TEST(HorovodEnvironment, CrossUnsetWithoutEveryNodesTaskCount) {
  HorovodTaskFacts f = block_task({2, 2}, 1, 0, "2(x2)");
  f.tasks_per_node.reset();
  HorovodEnvironment h = horovod_environment(f);
  EXPECT_EQ(h.env.size(), 4u);
  EXPECT_EQ(as_map(h).count("HOROVOD_CROSS_RANK"), 0u);
  EXPECT_EQ(as_map(h)["HOROVOD_RANK"], "2");
  EXPECT_NE(h.not_set.find("HOROVOD_CROSS_RANK and HOROVOD_CROSS_SIZE not set: SLURM_STEP_TASKS_PER_NODE is not"),
            std::string::npos)
      << h.not_set;
  for (const char* wrong : {"2", "2(x3)", "3,1", "1,3", "2(x2", "2(x0)", "x", "", "2,,2", "2;2", "-2,6"}) {
    f.tasks_per_node = wrong;
    h = horovod_environment(f);
    EXPECT_EQ(h.env.size(), 4u) << wrong;
    EXPECT_NE(h.not_set.find("does not match the step (task 2 of 4, local task 0 of 2, node 1 of 2)"),
              std::string::npos)
        << h.not_set;
  }
}

TEST(HorovodEnvironment, CrossUnsetForTheArbitraryDistribution) {
  HorovodTaskFacts f = block_task({2, 2}, 1, 0, "2(x2)");
  f.distribution = "arbitrary";
  const HorovodEnvironment h = horovod_environment(f);
  EXPECT_EQ(h.env.size(), 4u);
  EXPECT_NE(h.not_set.find("SLURM_DISTRIBUTION=arbitrary"), std::string::npos) << h.not_set;
}

TEST(HorovodEnvironment, NothingSetInHeterogeneousJobsOrWhenSlurmContradictsItself) {
  HorovodTaskFacts het = block_task({2}, 0, 1, "2");
  het.heterogeneous_job = true;
  HorovodEnvironment h = horovod_environment(het);
  EXPECT_TRUE(h.env.empty());
  EXPECT_NE(h.not_set.find("heterogeneous job"), std::string::npos) << h.not_set;

  HorovodTaskFacts offset = block_task({2}, 0, 1, "2");
  offset.procid = "5";  // a later component of a heterogeneous step
  h = horovod_environment(offset);
  EXPECT_TRUE(h.env.empty());
  EXPECT_NE(h.not_set.find("SLURM_PROCID=5 is not the task's id in the step (1)"), std::string::npos) << h.not_set;

  HorovodTaskFacts bad = block_task({2, 2}, 1, 1, "2(x2)");
  bad.local_id = 2;
  EXPECT_TRUE(horovod_environment(bad).env.empty());
  bad = block_task({2, 2}, 1, 1, "2(x2)");
  bad.node_id = 2;
  EXPECT_TRUE(horovod_environment(bad).env.empty());
  bad = block_task({2, 2}, 1, 1, "2(x2)");
  bad.total_tasks = 0;
  EXPECT_TRUE(horovod_environment(bad).env.empty());
  bad = block_task({2, 2}, 1, 1, "2(x2)");
  bad.procid.reset();
  bad.global_id = 4;
  EXPECT_TRUE(horovod_environment(bad).env.empty());

  HorovodTaskFacts one_node = block_task({2}, 0, 1, "2");
  one_node.total_tasks = 3;
  h = horovod_environment(one_node);
  EXPECT_EQ(h.env.size(), 4u);
  EXPECT_NE(h.not_set.find("one node but 2 of 3 tasks on it"), std::string::npos) << h.not_set;
}

TEST(HorovodEnvironment, TasksPerNodeParser) {
  using V = std::vector<std::uint32_t>;
  EXPECT_EQ(parse_tasks_per_node("2(x3),1", 10), (V{2, 2, 2, 1}));
  EXPECT_EQ(parse_tasks_per_node("4", 1), (V{4}));
  EXPECT_EQ(parse_tasks_per_node("1,2,3", 3), (V{1, 2, 3}));
  EXPECT_EQ(parse_tasks_per_node("2(x3)", 2), std::nullopt);  // more nodes than the step has
  EXPECT_EQ(parse_tasks_per_node("1(x4294967295)", 4), std::nullopt);
  for (const char* bad : {"", ",", "1,", ",1", "1(x2", "1(2)", "1(x)", "(x2)", "a", "1 ,2", "+1", "99999999999"}) {
    EXPECT_EQ(parse_tasks_per_node(bad, 100), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace riseml::spank
