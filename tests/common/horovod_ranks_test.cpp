// Horovod's cross rank and size, against what Horovod's MPI_Comm_split(local_rank, rank) makes of
// a job: the reference below splits the ranks by local rank and numbers each group by global rank.
#include <riseml/common/horovod_ranks.hpp>

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace riseml {
namespace {

struct Placed {
  int node;
  std::uint32_t local_rank;
};

// Every rank's node and local rank, for a layout given as the node of each global rank (local
// ranks numbered in global rank order on each node, as Slurm and PMIx number them).
std::vector<Placed> place(const std::vector<int>& node_of_rank) {
  std::map<int, std::uint32_t> next;
  std::vector<Placed> placed;
  for (int node : node_of_rank) placed.push_back({node, next[node]++});
  return placed;
}

// Horovod's own definition: the cross communicator of a rank holds the ranks with its local rank,
// ordered by global rank.
HorovodCross reference_cross(const std::vector<Placed>& placed, std::size_t rank) {
  HorovodCross cross{0, 0};
  for (std::size_t r = 0; r < placed.size(); ++r) {
    if (placed[r].local_rank != placed[rank].local_rank) continue;
    if (r < rank) ++cross.rank;
    ++cross.size;
  }
  return cross;
}

void expect_horovods_numbers(const std::vector<int>& node_of_rank, int nodes) {
  const auto counts = tasks_per_node(node_of_rank, nodes);
  ASSERT_TRUE(counts);
  const auto placed = place(node_of_rank);
  for (std::size_t r = 0; r < placed.size(); ++r) {
    const auto cross = horovod_cross(*counts, static_cast<std::uint32_t>(placed[r].node), placed[r].local_rank);
    ASSERT_TRUE(cross) << "rank " << r;
    const HorovodCross want = reference_cross(placed, r);
    EXPECT_EQ(cross->rank, want.rank) << "rank " << r;
    EXPECT_EQ(cross->size, want.size) << "rank " << r;
  }
}

TEST(HorovodRanks, UnevenBlockPlacements) {
  expect_horovods_numbers({0, 0, 0, 1}, 2);        // 3+1
  expect_horovods_numbers({0, 0, 1, 1, 2}, 3);     // 2+2+1
  expect_horovods_numbers({0, 1, 1, 1}, 2);        // 1+3
  expect_horovods_numbers({0, 1, 1, 2, 2, 2}, 3);  // 1+2+3
}

TEST(HorovodRanks, CyclicPlacements) {
  expect_horovods_numbers({0, 1, 0, 0}, 2);        // srun -m cyclic -n4 over 3+1
  expect_horovods_numbers({0, 1, 2, 0, 1}, 3);     // 2+2+1, cyclic
  expect_horovods_numbers({0, 1, 2, 3, 0, 1, 2, 3}, 4);
}

TEST(HorovodRanks, ThreePlusOneByHand) {
  // Node 0 runs local ranks 0, 1, 2; node 1 runs local rank 0 only.
  const std::uint32_t counts[] = {3, 1};
  EXPECT_EQ(horovod_cross(counts, 0, 0)->rank, 0u);
  EXPECT_EQ(horovod_cross(counts, 0, 0)->size, 2u);
  EXPECT_EQ(horovod_cross(counts, 1, 0)->rank, 1u);
  EXPECT_EQ(horovod_cross(counts, 1, 0)->size, 2u);
  EXPECT_EQ(horovod_cross(counts, 0, 1)->rank, 0u);
  EXPECT_EQ(horovod_cross(counts, 0, 1)->size, 1u);
  EXPECT_EQ(horovod_cross(counts, 0, 2)->size, 1u);
}

TEST(HorovodRanks, ContradictionsAreRefused) {
  const std::uint32_t counts[] = {2, 1};
  EXPECT_FALSE(horovod_cross(counts, 2, 0));  // no such node
  EXPECT_FALSE(horovod_cross(counts, 1, 1));  // node 1 has no local rank 1
  EXPECT_FALSE(tasks_per_node(std::vector<int>{0, 2}, 2));
  EXPECT_FALSE(tasks_per_node(std::vector<int>{0, -1}, 2));
  EXPECT_FALSE(tasks_per_node(std::vector<int>{}, 0));
}

TEST(HorovodRanks, VariablesInOrderAndCrossOnlyWhenKnown) {
  HorovodRanks r{5, 8, 1, 4, HorovodCross{1, 2}};
  const auto all = horovod_variables(r);
  ASSERT_EQ(all.size(), 6u);
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].first, horovod_variable_names()[i]);
  EXPECT_EQ(all[0].second, "5");
  EXPECT_EQ(all[4].second, "1");
  EXPECT_EQ(all[5].second, "2");
  r.cross.reset();
  EXPECT_EQ(horovod_variables(r).size(), 4u);
}

}  // namespace
}  // namespace riseml
