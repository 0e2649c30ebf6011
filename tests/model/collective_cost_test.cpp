// Allreduce costs against the formulas of docs/model.md, computed by hand.
#include <gtest/gtest.h>

#include <riseml/model/collective_cost.hpp>

namespace riseml::model {
namespace {

Cluster flat(int nodes, double alpha, double bw, double gamma) {
  Cluster c;
  c.nodes = nodes;
  c.ranks_per_node = 1;
  c.inter = {alpha, bw};
  c.reduce_s_per_byte = gamma;
  return c;
}

TEST(CollectiveCost, RingIsTwoNMinusOneAlphaPlusBetaAndGammaTerms) {
  // n = 4, S = 4 MB, alpha 10 us, 1 GB/s, gamma 0.1 ns/B:
  // 2(n-1) alpha = 60 us; 2(n-1)/n S beta = 6 ms; (n-1)/n S gamma = 0.3 ms.
  const Cost c = ring_cost(4e6, flat(4, 10e-6, 1e9, 1e-10));
  EXPECT_NEAR(c.latency_s, 60e-6, 1e-12);
  EXPECT_NEAR(c.bandwidth_s, 6e-3, 1e-12);
  EXPECT_NEAR(c.reduce_s, 3e-4, 1e-12);
  EXPECT_NEAR(c.total(), 6.36e-3, 1e-12);
}

TEST(CollectiveCost, OneRankCostsNothing) {
  EXPECT_EQ(allreduce_cost(1e6, flat(1, 1e-5, 1e9, 0), Algorithm::automatic).total(), 0);
}

TEST(CollectiveCost, HalvingDoublingPowerOfTwo) {
  // n = 8, S = 8 MB: 2 log2(8) alpha = 60 us; 2 (7/8) S beta = 14 ms; (7/8) S gamma = 0.7 ms.
  const Cost c = halving_doubling_cost(8e6, flat(8, 10e-6, 1e9, 1e-10));
  EXPECT_NEAR(c.latency_s, 60e-6, 1e-12);
  EXPECT_NEAR(c.bandwidth_s, 14e-3, 1e-12);
  EXPECT_NEAR(c.reduce_s, 7e-4, 1e-12);
}

TEST(CollectiveCost, HalvingDoublingFoldsTheExtraRanks) {
  // n = 6 = 4 + 2: fold in and out (2 alpha + 2 S beta + S gamma), then halving-doubling on 4
  // (4 alpha + 2 (3/4) S beta + (3/4) S gamma). S = 1 MB, alpha 1 us, 1 GB/s, gamma 1 ns/B.
  const Cost c = halving_doubling_cost(1e6, flat(6, 1e-6, 1e9, 1e-9));
  EXPECT_NEAR(c.latency_s, 6e-6, 1e-12);
  EXPECT_NEAR(c.bandwidth_s, 2e-3 + 1.5e-3, 1e-12);
  EXPECT_NEAR(c.reduce_s, 1e-3 + 0.75e-3, 1e-12);
}

TEST(CollectiveCost, HierarchicalSendsOneLthOfTheBytesPerRankAcross) {
  // N = 4 nodes of L = 2; inside 1 us, 10 GB/s; across 10 us, 1 GB/s; S = 8 MB, gamma 0.
  // inside: 2(L-1) (1 us + 4 MB / 10 GB/s) = 0.802 ms;
  // across: 2 allreduces of 4 MB sharing the NIC by ring on 4 nodes:
  //   2(N-1) alpha = 60 us, 2(N-1)/N (S/L) L beta = 12 ms.
  Cluster c = flat(4, 10e-6, 1e9, 0);
  c.ranks_per_node = 2;
  c.intra = {1e-6, 10e9};
  const Cost h = hierarchical_cost(8e6, c);
  EXPECT_NEAR(h.latency_s, 2e-6 + 60e-6, 1e-12);
  EXPECT_NEAR(h.bandwidth_s, 0.8e-3 + 12e-3, 1e-12);
  // The flat ring over the 8 ranks pays its 14 steps at the NIC's pace:
  // 14 (10 us + 1 MB / 1 GB/s) = 14.14 ms.
  EXPECT_NEAR(ring_cost(8e6, c).total(), 14 * (10e-6 + 1e-3), 1e-12);
  EXPECT_LT(h.total(), ring_cost(8e6, c).total());
}

TEST(CollectiveCost, HierarchicalOnGpuNodesStagesTheShardAndCrossesOnTheHosts) {
  // The cluster above with a host path: staging 2 GB/s, a CPU adds 1 GB/s, TCP 20 us a step.
  // inside as before: 2 us + 0.8 ms; staging the 4 MB shard out and back: 2 x 4 MB / 2 GB/s = 4 ms;
  // across on the hosts: 6 steps of (20 us + 2 flows x 1 MB / 1 GB/s) = 120 us + 12 ms, and
  // (N-1) x 1 MB reduced at 1 GB/s = 3 ms. Only that last bracket runs with the GPUs free.
  Cluster c = flat(4, 10e-6, 1e9, 0);
  c.ranks_per_node = 2;
  c.intra = {1e-6, 10e9};
  c.host_path = {true, 2e9, 1e-9, 20e-6};
  const Cost h = hierarchical_cost(8e6, c);
  EXPECT_NEAR(h.latency_s, 2e-6 + 120e-6, 1e-12);
  EXPECT_NEAR(h.bandwidth_s, 0.8e-3 + 4e-3 + 12e-3, 1e-12);
  EXPECT_NEAR(h.reduce_s, 3e-3, 1e-12);
  EXPECT_NEAR(h.host_s, 120e-6 + 12e-3 + 3e-3, 1e-12);
  // The flat ring (NCCL) never leaves the GPUs.
  EXPECT_DOUBLE_EQ(ring_cost(8e6, c).host_s, 0);
}

TEST(CollectiveCost, AutoChoosesAsTheCommunicatorDoes) {
  Cluster one_per_node = flat(4, 10e-6, 1e9, 0);
  EXPECT_EQ(choose_algorithm(1 << 20, one_per_node), Algorithm::ring);
  EXPECT_EQ(choose_algorithm(32 << 10, one_per_node), Algorithm::halving_doubling);   // < 64 KiB
  EXPECT_EQ(choose_algorithm(64 << 10, flat(8, 0, 1e9, 0)), Algorithm::halving_doubling);  // 8 KiB steps
  Cluster two_per_node = one_per_node;
  two_per_node.ranks_per_node = 2;
  EXPECT_EQ(choose_algorithm(1 << 20, two_per_node), Algorithm::hierarchical);
  EXPECT_EQ(choose_algorithm(1 << 20, two_per_node, Algorithm::ring), Algorithm::ring);
  EXPECT_EQ(choose_algorithm(1 << 20, one_per_node, Algorithm::hierarchical), Algorithm::ring);
}

}  // namespace
}  // namespace riseml::model
