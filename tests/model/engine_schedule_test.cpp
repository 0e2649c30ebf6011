// The engine schedule over a step, on hand-made profiles whose timeline can be worked out on
// paper: cycles, fusion, overlap with the backward pass, fp16.
#include <gtest/gtest.h>

#include <riseml/model/advice.hpp>
#include <riseml/model/engine_schedule.hpp>

namespace riseml::model {
namespace {

// Forward 10 ms; gradient a (1 M elements) after 5 ms of backward, b (1 M) after 5 ms more.
StepProfile two_tensors(double b_compute_s = 5e-3, double tail_s = 0) {
  StepProfile p;
  p.model = "two";
  p.forward_s = 10e-3;
  p.tail_s = tail_s;
  p.tensors = {{"a", 1e6, 5e-3}, {"b", 1e6, b_compute_s}};
  return p;
}

// 2 nodes, 1 rank each, 1 GB/s, no latency, no reduction cost: a ring allreduce of S bytes
// takes 2 (1/2) S / 1 GB/s = S ns; 4 MB (1 M float32) = 4 ms.
Cluster two_nodes(double alpha = 0) {
  Cluster c;
  c.nodes = 2;
  c.ranks_per_node = 1;
  c.inter = {alpha, 1e9};
  return c;
}

TEST(EngineSchedule, EachGradientWaitsForTheNextCycleThenTheWire) {
  // a ready at 15 ms, reduced 15-19; b ready at 20 ms, reduced 20-24: step 24 ms of 20 compute.
  const Prediction p = simulate_step(two_tensors(), two_nodes(), EngineSettings{});
  EXPECT_NEAR(p.compute_s, 20e-3, 1e-9);
  EXPECT_NEAR(p.step_s, 24e-3, 1e-6);
  EXPECT_NEAR(p.exposed_s, 4e-3, 1e-6);
  EXPECT_NEAR(p.efficiency, 20.0 / 24, 1e-4);
  EXPECT_EQ(p.collectives, 2);
  EXPECT_NEAR(p.wire.bandwidth_s, 8e-3, 1e-9);
}

TEST(EngineSchedule, CommunicationHiddenBehindTheBackwardPassCostsNothing) {
  // a and b both ready at 15 ms: a reaches the idle engine first and goes alone (15-19 ms), b
  // next (19-23 ms); a tail of 10 ms hides both (step = compute = 25 ms).
  const Prediction p = simulate_step(two_tensors(0, 10e-3), two_nodes(), EngineSettings{});
  EXPECT_NEAR(p.step_s, 25e-3, 1e-9);
  EXPECT_NEAR(p.exposed_s, 0, 1e-9);
  EXPECT_DOUBLE_EQ(p.efficiency, 1);
  EXPECT_EQ(p.collectives, 2);
  EXPECT_EQ(bounding_resource(p), Bound::compute);
}

TEST(EngineSchedule, AStepThatEndsWithinOnePercentOfTheBackwardPassIsBoundByCompute) {
  // 1 s of backward pass, both 4 MB gradients ready at its end: 8 ms exposed on the 1 GB/s
  // link, 0.8% of the step: compute bounds it (the last gradients' own collectives can never be
  // hidden). At 100 MB/s they take 80 ms, 7.3%: the link.
  StepProfile long_compute = two_tensors(0);
  long_compute.tensors[0].compute_before_s = 1.0;
  const Prediction p = simulate_step(long_compute, two_nodes(), EngineSettings{});
  EXPECT_GT(p.step_s, p.backward_end_s);
  EXPECT_LT(p.step_s - p.backward_end_s, 0.01 * p.step_s);
  EXPECT_EQ(bounding_resource(p), Bound::compute);
  Cluster slow = two_nodes();
  slow.inter.bandwidth_Bps = 1e8;
  const Prediction q = simulate_step(long_compute, slow, EngineSettings{});
  EXPECT_GT(q.step_s - q.backward_end_s, 0.01 * q.step_s);
  EXPECT_EQ(bounding_resource(q), Bound::link_bandwidth);
}

TEST(EngineSchedule, AHandOverLagDelaysTheEngineNotTheCompute) {
  // The slowest rank's gradients reach the engine 1 ms after their compute: a (ready at 15 ms)
  // is reduced 16-20, b (ready at 20) 21-25; the backward pass still ends at 20 ms.
  Cluster lagging = two_nodes();
  lagging.hand_over_lag_s = 1e-3;
  const Prediction p = simulate_step(two_tensors(), lagging, EngineSettings{});
  EXPECT_NEAR(p.backward_end_s, 20e-3, 1e-9);
  ASSERT_EQ(p.schedule.size(), 2u);
  EXPECT_NEAR(p.schedule[0].cycle_start_s, 16e-3, 1e-9);
  EXPECT_NEAR(p.schedule[1].cycle_start_s, 21e-3, 1e-9);
  EXPECT_NEAR(p.step_s, 25e-3, 1e-6);
  EXPECT_NEAR(p.queue_s, 0, 1e-9);  // woken cycles: no gradient waits beyond its lag
  // Hidden communication stays hidden while the lag fits in the tail (10 ms: a ends 20, b 24).
  EXPECT_NEAR(simulate_step(two_tensors(0, 10e-3), lagging, EngineSettings{}).step_s, 25e-3, 1e-9);
  // Both ready at 15 ms and a lag of 3 ms: a 18-22, b 22-26, against 15-19 and 19-23 without.
  Cluster late = two_nodes();
  late.hand_over_lag_s = 3e-3;
  EXPECT_NEAR(simulate_step(two_tensors(0), late, EngineSettings{}).step_s, 26e-3, 1e-6);
  EXPECT_NEAR(simulate_step(two_tensors(0), two_nodes(), EngineSettings{}).step_s, 23e-3, 1e-6);
}

TEST(EngineSchedule, TheIdleEngineStartsACycleWhenAGradientArrives) {
  // a, b and c all ready at 15 ms; alpha 1 ms, so a cycle's negotiation is 2 ms and a ring 2 ms
  // plus 4 ms a tensor. riseml's engine wakes for a: 15 + 2 + 6 = 23 ms; b and c, handed over
  // after it woke, go fused in the next cycle, which starts at once: 23 + 2 + 2 + 8 = 35 ms.
  StepProfile three = two_tensors(0);
  three.tensors.push_back({"c", 1e6, 0});
  const Prediction p = simulate_step(three, two_nodes(1e-3), EngineSettings{});
  ASSERT_EQ(p.schedule.size(), 2u);
  EXPECT_EQ(p.schedule[0].gradients.size(), 1u);
  EXPECT_NEAR(p.schedule[0].cycle_start_s, 15e-3, 1e-9);
  EXPECT_EQ(p.schedule[1].gradients.size(), 2u);
  EXPECT_NEAR(p.schedule[1].cycle_start_s, 23e-3, 1e-7);
  EXPECT_NEAR(p.step_s, 35e-3, 1e-6);
  EXPECT_EQ(bounding_resource(p), Bound::link_bandwidth);
  // Its cycle time does not shape the step (Horovod's loop: cycles on a grid, all three fused).
  EngineSettings slow_cycle;
  slow_cycle.cycle_s = 5e-3;
  EXPECT_NEAR(simulate_step(three, two_nodes(1e-3), slow_cycle).step_s, 35e-3, 1e-6);
  slow_cycle.start_when_idle = false;
  const Prediction h = simulate_step(three, two_nodes(1e-3), slow_cycle);
  EXPECT_EQ(h.collectives, 1);
  EXPECT_NEAR(h.step_s, 15e-3 + 2e-3 + 2e-3 + 12e-3, 1e-6);
}

TEST(EngineSchedule, TheEnginesOwnTimeIsChargedEveryCycle) {
  // As TheIdleEngineStartsACycleWhenAGradientArrives, with 1 ms of the engine's own a cycle:
  // a ends at 24 ms, b and c at 24 + 1 + 2 + 2 + 8 = 37 ms.
  StepProfile three = two_tensors(0);
  three.tensors.push_back({"c", 1e6, 0});
  Cluster c = two_nodes(1e-3);
  c.cycle_overhead_s = 1e-3;
  const Prediction p = simulate_step(three, c, EngineSettings{});
  EXPECT_EQ(p.cycles, 2);
  EXPECT_NEAR(p.cycle_overhead_s, 2e-3, 1e-9);
  EXPECT_NEAR(p.step_s, 37e-3, 1e-6);
  EXPECT_NEAR(p.engine_busy_s, p.wire.total() + p.negotiation_s + 2e-3, 1e-9);
}

TEST(EngineSchedule, OnGpuNodesTheEngineWaitsOutTheCycleAfterWorkButWakesAfterAnIdleStretch) {
  // 1 KB gradients on a fast link (about 1 us each): a at 15 ms, b, c, d 0.2 ms apart, e 5 ms
  // after d. start_when_idle alone: every gradient wakes the engine, 5 collectives.
  // linger_after_work (riseml's GPU path): a at 15 ms; b, c, d wait for the cycle at 16 ms and
  // go fused; the engine then parks, and e (20.6 ms) wakes it at once: 3 collectives.
  StepProfile p;
  p.forward_s = 10e-3;
  p.tensors = {{"a", 256, 5e-3}, {"b", 256, 0.2e-3}, {"c", 256, 0.2e-3}, {"d", 256, 0.2e-3}, {"e", 256, 5e-3}};
  const Prediction woken = simulate_step(p, two_nodes(), EngineSettings{});
  EXPECT_EQ(woken.collectives, 5);
  EngineSettings gpu;
  gpu.linger_after_work = true;
  const Prediction lingering = simulate_step(p, two_nodes(), gpu);
  EXPECT_EQ(lingering.collectives, 3);
  EXPECT_EQ(lingering.cycles, 3);
  ASSERT_EQ(lingering.schedule.size(), 3u);
  EXPECT_NEAR(lingering.schedule[0].cycle_start_s, 15e-3, 1e-9);
  EXPECT_NEAR(lingering.schedule[1].cycle_start_s, 16e-3, 1e-9);
  EXPECT_EQ(lingering.schedule[1].gradients.size(), 3u);
  EXPECT_NEAR(lingering.schedule[2].cycle_start_s, 20.6e-3, 1e-9);
}

TEST(EngineSchedule, TheBoundIsTheLargestPartOfTheEngineWorkThatEndsTheStep) {
  // 1 ms alpha against 1 KB tensors: latency; 1 GB/s copies of 4 MB fused buffers against a
  // 1 TB/s link: the copies.
  StepProfile small = two_tensors(0);
  for (auto& t : small.tensors) t.elements = 256;
  EXPECT_EQ(bounding_resource(simulate_step(small, two_nodes(1e-3), EngineSettings{})), Bound::latency);
  Cluster fast_link = two_nodes();
  fast_link.inter.bandwidth_Bps = 1e12;
  fast_link.copy_Bps = 1e9;
  EngineSettings horovod_loop;  // fuses a and b, so copies them
  horovod_loop.start_when_idle = false;
  EXPECT_EQ(bounding_resource(simulate_step(two_tensors(0), fast_link, horovod_loop)), Bound::fusion_copies);
}

TEST(EngineSchedule, CollectivesSlowTheComputeTheyOverlap) {
  // Compute at half speed while a collective runs. a ready at 15 ms, reduced 15-19 ms; b's 5 ms
  // of compute get 2 ms done in 15-19 and the other 3 after: ready at 22 ms (not 20), reduced
  // 22-26 ms; the 10 ms tail gets 2 ms done in 22-26 and ends at 34 ms (not 30).
  Cluster c = two_nodes();
  c.overlap_slowdown = 0.5;
  const Prediction p = simulate_step(two_tensors(5e-3, 10e-3), c, EngineSettings{});
  EXPECT_NEAR(p.compute_s, 30e-3, 1e-9);
  EXPECT_NEAR(p.backward_end_s, 34e-3, 1e-6);
  EXPECT_NEAR(p.compute_slowed_s, 4e-3, 1e-6);
  EXPECT_NEAR(p.step_s, 34e-3, 1e-6);
  EXPECT_NEAR(p.efficiency, 30.0 / 34, 1e-4);
  EXPECT_EQ(p.collectives, 2);
  // Without the slowdown the same step hides everything: 30 ms.
  const Prediction q = simulate_step(two_tensors(5e-3, 10e-3), two_nodes(), EngineSettings{});
  EXPECT_NEAR(q.step_s, 30e-3, 1e-6);
  EXPECT_DOUBLE_EQ(q.compute_slowed_s, 0);
}

TEST(EngineSchedule, ShorterCollectivesSlowComputeLess) {
  // fp16 halves the bytes, so halves the time compute runs slowed: 2 ms (a: 15-17 ms, b's compute
  // 1 ms done there, 4 ms after: ready at 21; b: 21-23, the tail 1 ms done there, 9 after: 32 ms).
  Cluster c = two_nodes();
  c.overlap_slowdown = 0.5;
  EngineSettings half;
  half.fp16 = true;
  const Prediction p = simulate_step(two_tensors(5e-3, 10e-3), c, half);
  EXPECT_NEAR(p.step_s, 32e-3, 1e-6);
  EXPECT_NEAR(p.compute_slowed_s, 2e-3, 1e-6);
}

TEST(EngineSchedule, StepsOnTheHostsDoNotSlowCompute) {
  // 2 nodes of 2 GPUs, a free link inside (1 TB/s): the hierarchical mode's allreduce of a
  // 4 MB gradient is 4 us inside (on the GPUs) and 4 ms across. Run by the hosts, the 4 ms
  // leave compute alone: it slows by 0.5 x 4 us / 4.004 ms of each collective's time, a few us.
  Cluster c;
  c.nodes = 2;
  c.ranks_per_node = 2;
  c.inter = {0, 1e9};
  c.intra = {0, 1e12};
  c.overlap_slowdown = 0.5;
  c.host_path = {true, 0, 0, 0};
  EngineSettings hierarchical;  // RISEML_GPU_ALGORITHM=hierarchical (GPU nodes default to NCCL's ring)
  hierarchical.algorithm = Algorithm::hierarchical;
  EXPECT_EQ(simulate_step(two_tensors(5e-3, 10e-3), c, EngineSettings{}).algorithms.count(Algorithm::hierarchical), 0u);
  const Prediction p = simulate_step(two_tensors(5e-3, 10e-3), c, hierarchical);
  EXPECT_EQ(p.algorithms.at(Algorithm::hierarchical), 2);
  EXPECT_NEAR(p.wire.host_s, 8e-3, 1e-9);
  EXPECT_LT(p.compute_slowed_s, 10e-6);
  EXPECT_NEAR(p.step_s, 30e-3, 10e-6);
  // The same collectives on the GPUs (NCCL across nodes) slow it as in CollectivesSlowTheComputeTheyOverlap.
  c.host_path = {};
  const Prediction q = simulate_step(two_tensors(5e-3, 10e-3), c, hierarchical);
  EXPECT_NEAR(q.compute_slowed_s, 4e-3, 20e-6);
}

TEST(EngineSchedule, FusionSavesTheLatencyOfEachCollective) {
  // Both ready at 15 ms; alpha 1 ms. The cycle's negotiation (response cache: a halving-doubling
  // allreduce of the bit vector on 2 ranks, one halving and one doubling step) costs 2 alpha.
  // Fused: one 8 MB ring = 2 alpha + 8 ms = 10 ms: step 15 + 2 + 10 = 27 ms.
  // Unfused (threshold 0): two rings of 2 alpha + 4 ms: 12 ms: step 29 ms.
  EngineSettings fused;  // Horovod's cycle loop, which finds both ready in one cycle
  fused.start_when_idle = false;
  const Prediction f = simulate_step(two_tensors(0), two_nodes(1e-3), fused);
  EXPECT_NEAR(f.negotiation_s, 2e-3, 1e-6);
  EXPECT_NEAR(f.step_s, 27e-3, 1e-6);
  EXPECT_EQ(f.collectives, 1);
  EngineSettings unfused = fused;
  unfused.fusion_bytes = 0;
  const Prediction u = simulate_step(two_tensors(0), two_nodes(1e-3), unfused);
  EXPECT_NEAR(u.step_s, 29e-3, 1e-6);
  EXPECT_EQ(u.collectives, 2);
  // A fusion buffer is copied in and out: 2 x 8 MB at 8 GB/s = 2 ms more.
  Cluster copying = two_nodes(1e-3);
  copying.copy_Bps = 8e9;
  EXPECT_NEAR(simulate_step(two_tensors(0), copying, fused).step_s, 29e-3, 1e-6);
}

TEST(EngineSchedule, TheSmallTensorsOfACycleGoFirstInTheirOwnBuffer) {
  // a (1 M), b (1000), c (1 M), d (16384 elements = 64 KiB) all ready at 15 ms, one cycle.
  // riseml's engine runs b and d (<= 64 KiB) fused first, then a and c: two collectives, each
  // with its 2 alpha; the bytes are the same.
  StepProfile four = two_tensors(0);
  four.tensors = {{"a", 1e6, 5e-3}, {"b", 1000, 0}, {"c", 1e6, 0}, {"d", 16384, 0}};
  EngineSettings e;
  e.start_when_idle = false;
  const Prediction p = simulate_step(four, two_nodes(1e-3), e);
  ASSERT_EQ(p.schedule.size(), 2u);
  EXPECT_EQ(p.schedule[0].gradients, (std::vector<std::size_t>{1, 3}));
  EXPECT_NEAR(p.schedule[0].bytes, 4 * (1000 + 16384), 1e-9);
  EXPECT_EQ(p.schedule[1].gradients, (std::vector<std::size_t>{0, 2}));
  // Horovod fuses the cycle in one buffer, in order: one collective, 2 alpha less.
  EngineSettings h = e;
  h.small_first_bytes = 0;
  const Prediction one = simulate_step(four, two_nodes(1e-3), h);
  ASSERT_EQ(one.schedule.size(), 1u);
  EXPECT_EQ(one.schedule[0].gradients, (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_NEAR(p.step_s - one.step_s, 2e-3, 1e-6);
  // In float16, d's 32 KiB is small as well; a 16385-element tensor is not in float32.
  four.tensors[3].elements = 16385;
  EXPECT_EQ(simulate_step(four, two_nodes(1e-3), e).schedule[0].gradients, (std::vector<std::size_t>{1}));
}

TEST(EngineSchedule, Fp16HalvesTheBytes) {
  // 2 MB each: a 15-17, b 20-22 ms.
  EngineSettings e;
  e.fp16 = true;
  const Prediction p = simulate_step(two_tensors(), two_nodes(), e);
  EXPECT_NEAR(p.bytes_per_rank, 4e6, 1e-9);
  EXPECT_NEAR(p.step_s, 22e-3, 1e-6);
  EXPECT_NEAR(p.wire.bandwidth_s, 4e-3, 1e-9);
}

TEST(EngineSchedule, ALongCycleDelaysTheLastGradient) {
  // A 4 ms cycle: cycles at 4, 8, 12, 16 ms: a (ready 15) goes at 16-20; b (ready 20) at 20-24.
  EngineSettings e;  // Horovod's loop: cycles on a grid
  e.start_when_idle = false;
  e.cycle_s = 4e-3;
  const Prediction p = simulate_step(two_tensors(), two_nodes(), e);
  EXPECT_NEAR(p.step_s, 24e-3, 1e-6);
  EXPECT_NEAR(p.queue_s, 1e-3, 1e-6);
  e.cycle_s = 3e-3;  // cycles at 3..15: a at 15-19; next at 19 (busy), b ready 20 -> 22-26.
  EXPECT_NEAR(simulate_step(two_tensors(), two_nodes(), e).step_s, 26e-3, 1e-6);
}

TEST(EngineSchedule, OneRankIsAllCompute) {
  Cluster one = two_nodes();
  one.nodes = 1;
  const Prediction p = simulate_step(two_tensors(), one, EngineSettings{});
  EXPECT_DOUBLE_EQ(p.efficiency, 1);
  EXPECT_EQ(p.collectives, 0);
}

TEST(EngineSchedule, ShippedWorkloadsLoad) {
  const StepProfile p = load_profile("resnet101", {RISEML_WORKLOADS_SOURCE_DIR});
  EXPECT_EQ(p.tensors.size(), 314u);
  EXPECT_NEAR(p.compute_s(), 0.4947, 1e-3);
  EXPECT_THROW(load_profile("no-such-model", {RISEML_WORKLOADS_SOURCE_DIR}), ProfileError);
  EXPECT_THROW(parse_profile("riseml-workload 1\nmodel x\n", "t.workload"), ProfileError);
}

TEST(Advice, Fp16HelpsALinkBoundStep) {
  const auto advice = advise(two_tensors(), two_nodes(), EngineSettings{});
  ASSERT_FALSE(advice.empty());
  bool fp16 = false;
  for (const auto& a : advice) fp16 = fp16 || a.engine.fp16;
  EXPECT_TRUE(fp16);
}

TEST(Advice, ClusterShapes) {
  Cluster base = two_nodes();
  EXPECT_EQ(cluster_for(base, 1, 4).nodes, 1);
  EXPECT_EQ(cluster_for(base, 2, 4).ranks_per_node, 2);
  EXPECT_EQ(cluster_for(base, 128, 4).nodes, 32);
  EXPECT_EQ(cluster_for(base, 128, 4).ranks_per_node, 4);
}

}  // namespace
}  // namespace riseml::model
