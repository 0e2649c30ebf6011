// riseml estimate: the predicted step for the job's nodes x GPUs, the table, the advice; a site
// without a network, a broken network: section and an unknown workload exit 2 with a fix.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "test_support.hpp"

namespace riseml::test {
namespace {

#define REQUIRE_CLI()                                          \
  if (cli_path().empty()) GTEST_SKIP() << "no riseml CLI in this build (a fuzz build)"

fs::path here() { return source_dir() / "estimate"; }
std::string network_site() { return (source_dir() / "sites" / "network-roce25.yml").string(); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(EstimateCli, PredictsTheJobAndOtherSizes) {
  REQUIRE_CLI();
  const CommandResult r = run_command({cli_path(), "estimate", "horovod-32x4.yml", "--site", network_site(),
                                       "--workload", "resnet101"},
                                      here());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "riseml estimate: resnet101, 44.55 M parameters in 314 tensors")) << r.out;
  EXPECT_TRUE(contains(r.out, "this job: 32 nodes x 4 GPUs = 128 ranks")) << r.out;
  EXPECT_TRUE(contains(r.out, "efficiency 0.")) << r.out;
  // The table: 1..1024 GPUs, 4 a node.
  EXPECT_TRUE(contains(r.out, "\n1     1 x 1 ")) << r.out;
  EXPECT_TRUE(contains(r.out, "\n1024  256 x 4 ")) << r.out;
  EXPECT_TRUE(contains(r.out, "settings that would help this job:")) << r.out;
}

TEST(EstimateCli, HorovodSettingsAndOverrides) {
  REQUIRE_CLI();
  const CommandResult r = run_command({cli_path(), "estimate", "--site", network_site(), "--workload", "vgg16",
                                       "--settings", "horovod", "--nodes", "2", "--gpus-per-node", "1",
                                       "--compute-scale", "0.25"},
                                      here());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "engine (horovod settings): cycle 5 ms, fusion 64 MiB, algorithm nccl (GPU)")) << r.out;
  EXPECT_TRUE(contains(r.out, "this job: 2 nodes x 1 GPU = 2 ranks")) << r.out;
  // VGG-16 on a GPU 4x faster than a P100 is link-bound here: 553 MB over 25 Gbit/s = 177 ms.
  EXPECT_TRUE(contains(r.out, "engine busy 177.2 ms of the step: bandwidth 177.1")) << r.out;
  EXPECT_TRUE(contains(r.out, "  fp16 compression")) << "a link-bound VGG-16 wants fp16:\n" << r.out;
  // --plot (python3-matplotlib) is optional here: not run by the test.
}

// --schedule: every collective of the job's step, in order; the last one ends the step (a
// link-bound VGG-16), and the gradients it lists add up to the model's.
TEST(EstimateCli, ScheduleListsEveryCollectiveAndTheLastEndsTheStep) {
  REQUIRE_CLI();
  const CommandResult r = run_command({cli_path(), "estimate", "--site", network_site(), "--workload", "vgg16",
                                       "--nodes", "2", "--gpus-per-node", "1", "--compute-scale", "0.25",
                                       "--schedule"},
                                      here());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto at = r.out.find("the step's collectives (times from the step's start):\ncycle");
  ASSERT_NE(at, std::string::npos) << r.out;
  std::istringstream rows(r.out.substr(r.out.find('\n', r.out.find("end ms", at)) + 1));
  std::string line, last;
  int gradients = 0;
  while (std::getline(rows, line) && !line.empty()) {
    std::istringstream f(line);
    int cycle = 0, count = 0;
    f >> cycle >> count;
    gradients += count;
    last = line;
  }
  EXPECT_EQ(gradients, 32) << r.out;  // VGG-16's 32 gradient tensors
  double step = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str() + r.out.find("  step "), "  step %lf ms", &step), 1);
  double end = 0;
  std::istringstream f(last);
  std::string word;
  for (int i = 0; i < 10 && f >> word; ++i) end = std::atof(word.c_str());
  EXPECT_NEAR(end, step, 0.1) << r.out;
}

TEST(EstimateCli, SiteWithoutNetworkSaysWhatToAdd) {
  REQUIRE_CLI();
  const std::string site = (source_dir() / "sites" / "pyxis-frameworks.yml").string();
  const CommandResult r = run_command(
      {cli_path(), "estimate", "horovod-32x4.yml", "--site", site, "--workload", "resnet101"}, here());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, "pyxis-frameworks.yml: error: network: riseml estimate needs the cluster's network "
                              "here: add network: {gpus_per_node: 4, nodes_link: {bandwidth: 25gbit"))
      << r.err;
}

TEST(EstimateCli, BrokenNetworkSectionIsReportedWithLines) {
  REQUIRE_CLI();
  const CommandResult r = run_command({cli_path(), "estimate", "horovod-32x4.yml", "--site", "bad-network.yml",
                                       "--workload", "resnet101"},
                                      here());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, "bad-network.yml:2:18: error: network.gpus_per_node:")) << r.err;
  EXPECT_TRUE(contains(r.err, "bad-network.yml:3:27: error: network.nodes_link.bandwidth: 'fast' is not a rate: "
                              "write bits or bytes a second with a unit, e.g. 25gbit"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "network.nodes_link.latency: '5 parsecs' is not a duration")) << r.err;
  EXPECT_TRUE(contains(r.err, "bad-network.yml:4:16: error: network.intra_node.bandwith: unknown key (did you mean "
                              "'bandwidth'?)"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "bad-network.yml:5:21: error: network.overlap_slowdown: must be below 1")) << r.err;
}

TEST(EstimateCli, RatesAndDurationsNoMachineHasAreRefusedWithLines) {
  // Parsed, finite and positive, but a step from them would be hundreds of digits long.
  REQUIRE_CLI();
  const CommandResult r = run_command({cli_path(), "estimate", "horovod-32x4.yml", "--site", "absurd-network.yml",
                                       "--workload", "resnet101"},
                                      here());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, "absurd-network.yml:2:27: error: network.nodes_link.bandwidth: '1e-300GB/s' is out "
                              "of range: a rate from 1kbyte to 100tbyte a second"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "network.nodes_link.latency: '1e308us' is out of range: a duration of at most 10s"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "absurd-network.yml:3:27: error: network.intra_node.bandwidth: '1e300gbyte' is out"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "absurd-network.yml:4:21: error: network.reduce_bandwidth: '0.5kbyte' is out")) << r.err;
  EXPECT_TRUE(contains(r.err, "absurd-network.yml:5:19: error: network.cycle_overhead: '11s' is out")) << r.err;
}

TEST(EstimateCli, LinkSpreadOutOfRangeIsReportedWithLines) {
  REQUIRE_CLI();
  const CommandResult r = run_command({cli_path(), "estimate", "--site", "bad-spread.yml", "--workload", "resnet50",
                                       "--nodes", "2"},
                                      here());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, "bad-spread.yml:4:18: error: network.spread.fast: must be from 0.1 to 10")) << r.err;
  EXPECT_TRUE(contains(r.err, "bad-spread.yml:4:28: error: network.spread.mean: must be from 0.5 to 10")) << r.err;
  const CommandResult k = run_command({cli_path(), "estimate", "--site", "bad-spread-keys.yml", "--workload",
                                       "resnet50", "--nodes", "2"},
                                      here());
  EXPECT_EQ(k.status, 2);
  EXPECT_TRUE(contains(k.err, "network.spread.fastest: unknown key")) << k.err;
  EXPECT_TRUE(contains(k.err, "network.spread: needs fast")) << k.err;
  const CommandResult m = run_command({cli_path(), "estimate", "--site", "bad-spread-order.yml", "--workload",
                                       "resnet50", "--nodes", "2"},
                                      here());
  EXPECT_EQ(m.status, 2);
  EXPECT_TRUE(contains(m.err, "bad-spread-order.yml:3:40: error: network.spread.slow: must be at least fast"))
      << m.err;
  // Without a spread (a hand-written network) there is no range, and the output says why.
  const CommandResult plain = run_command({cli_path(), "estimate", "--site", network_site(), "--workload",
                                           "resnet50", "--nodes", "2"},
                                          here());
  EXPECT_EQ(plain.status, 0) << plain.err;
  EXPECT_TRUE(contains(plain.out, "  range: none (the network file has no spread: riseml-bench --fit measures it)"))
      << plain.out;
}

TEST(EstimateCli, BrokenHostPathIsReportedWithLines) {
  REQUIRE_CLI();
  const CommandResult r = run_command({cli_path(), "estimate", "horovod-32x4.yml", "--site", "bad-host-path.yml",
                                       "--workload", "vgg16"},
                                      here());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, "bad-host-path.yml:3:14: error: network.host_path: needs reduce_bandwidth, like the "
                              "other two (docs/model.md, \"GPU nodes\"): e.g. host_path: {staging_bandwidth: "
                              "6gbyte, reduce_bandwidth: 4gbyte, latency: 20us}"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "bad-host-path.yml:3:51: error: network.host_path.latency: 'soon' is not a duration"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "bad-host-path.yml:3:57: error: network.host_path.reduce_bandwith: unknown key (did "
                              "you mean 'reduce_bandwidth'?)"))
      << r.err;
}

// On GPU nodes the engine runs NCCL over all ranks unless RISEML_GPU_ALGORITHM=hierarchical, whose
// step between nodes runs on the hosts: the output says so, the advice names the variable, and
// only the GPU's share of the collectives slows compute.
TEST(EstimateCli, HostPathIsShownAndSparesTheGpu) {
  REQUIRE_CLI();
  const CommandResult nccl = run_command({cli_path(), "estimate", "horovod-32x4.yml", "--site", network_site(),
                                          "--workload", "vgg16", "--fp16", "--overlap-slowdown", "0.3"},
                                         here());
  ASSERT_EQ(nccl.status, 0) << nccl.err;
  EXPECT_TRUE(contains(nccl.out, "hierarchical between nodes on the hosts: staging 6.00 GB/s each way, reduce "
                                 "4.00 GB/s, 20.0 us a step"))
      << nccl.out;
  EXPECT_TRUE(contains(nccl.out, "compute runs at 70% of its speed while a collective runs on the GPU")) << nccl.out;
  EXPECT_TRUE(contains(nccl.out, "algorithm nccl (GPU)")) << nccl.out;
  EXPECT_TRUE(contains(nccl.out, "efficiency 0.872")) << nccl.out;
  EXPECT_TRUE(contains(nccl.out, "  RISEML_GPU_ALGORITHM=hierarchical (or HOROVOD_HIERARCHICAL_ALLREDUCE=1): "
                                 "efficiency 0.954"))
      << nccl.out;

  const CommandResult hier = run_command({cli_path(), "estimate", "horovod-32x4.yml", "--site", network_site(),
                                          "--workload", "vgg16", "--fp16", "--overlap-slowdown", "0.3",
                                          "--algorithm", "hierarchical"},
                                         here());
  ASSERT_EQ(hier.status, 0) << hier.err;
  EXPECT_TRUE(contains(hier.out, "algorithm hierarchical (GPU)")) << hier.out;
  EXPECT_TRUE(contains(hier.out, "efficiency 0.954")) << hier.out;
}

// riseml-bench --fit's file replaces the site's network; the job's shape still comes from the
// job and the site.
TEST(EstimateCli, TheHandOverLagMovesAComputeBoundStepAndBoundsItsRange) {
  REQUIRE_CLI();
  // inception_v3 in float16 on 2 nodes at 2.5 Gbit/s is compute-bound: the step is the compute
  // plus the last gradient's cycle after the lag (252 us), and the range spans the lag's
  // fastest (101 us) to slowest (540 us) try.
  const CommandResult r = run_command({cli_path(), "estimate", "--site", network_site(), "--network",
                                       "fitted-lag.yml", "--workload", "inception_v3", "--fp16", "--nodes", "2",
                                       "--gpus-per-node", "1"},
                                      here());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "a gradient reaches the engine on the slowest rank 252.0 us after its compute "
                              "(measured by the fit after idle: 101.0 us - 540.0 us)"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "the hand-over's lag from 101.0 us to 540.0 us")) << r.out;
  double step = 0, compute = 0, low = 0, high = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str() + r.out.find("  step "), "  step %lf ms, compute %lf ms", &step, &compute), 2)
      << r.out;
  ASSERT_EQ(std::sscanf(r.out.c_str() + r.out.find("  range "), "  range %lf - %lf ms", &low, &high), 2) << r.out;
  EXPECT_NEAR(step - compute, 0.35, 0.1) << r.out;  // the lag and the last small collective
  EXPECT_NEAR(high - low, 0.5, 0.15) << r.out;      // 540 - 101 us, the cycle a little slower too
  EXPECT_TRUE(contains(r.out, "  bounded by compute")) << r.out;

  // A lag the fit could not have written is refused, with the file's line and key.
  const CommandResult order = run_command({cli_path(), "estimate", "--site", "bad-hand-over-lag.yml", "--workload",
                                           "resnet50", "--nodes", "2"},
                                          here());
  EXPECT_EQ(order.status, 2);
  EXPECT_EQ(order.out, "");
  EXPECT_TRUE(contains(order.err, "bad-hand-over-lag.yml:3:18: error: network.hand_over_lag: needs fast <= median "
                                  "<= slow"))
      << order.err;
  const CommandResult keys = run_command({cli_path(), "estimate", "--site", "bad-hand-over-lag-keys.yml",
                                          "--workload", "resnet50", "--nodes", "2"},
                                         here());
  EXPECT_EQ(keys.status, 2);
  EXPECT_TRUE(contains(keys.err, "network.hand_over_lag.typical: unknown key")) << keys.err;
  EXPECT_TRUE(contains(keys.err, "network.hand_over_lag: needs median")) << keys.err;
  EXPECT_TRUE(contains(keys.err, "bad-hand-over-lag-keys.yml:3:53: error: network.hand_over_lag.slow: '20s' is out "
                                 "of range: a duration of at most 10s"))
      << keys.err;
}

TEST(EstimateCli, MeasuredNetworkFileReplacesTheSites) {
  REQUIRE_CLI();
  const CommandResult r = run_command({cli_path(), "estimate", "horovod-32x4.yml", "--site", network_site(),
                                       "--network", "fitted-1gbit.yml", "--workload", "resnet50", "--nodes", "2",
                                       "--gpus-per-node", "1"},
                                      here());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "network (fitted-1gbit.yml): between nodes 117.1 MB/s, 8.3 us")) << r.out;
  EXPECT_TRUE(contains(r.out, "compute runs at 80% of its speed while a collective runs")) << r.out;
  EXPECT_TRUE(contains(r.out, "compute slowed by collectives:")) << r.out;
  EXPECT_TRUE(contains(r.out, "this job: 2 nodes x 1 GPU = 2 ranks")) << r.out;
  // The fit's spread makes the range: the slower link cannot make the step shorter.
  const auto at = r.out.find("  range ");
  ASSERT_NE(at, std::string::npos) << r.out;
  double low = 0, high = 0, step = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str() + at, "  range %lf - %lf ms", &low, &high), 2) << r.out;
  ASSERT_EQ(std::sscanf(r.out.c_str() + r.out.find("  step "), "  step %lf ms", &step), 1) << r.out;
  EXPECT_LE(low, step);
  EXPECT_GE(high, step);
  EXPECT_LT(low, high) << r.out;
  EXPECT_TRUE(contains(r.out, "bursts ran (spread fast 0.980, slow 1.060; their mean 1.010 of the "
                              "median: a long run's average step)"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "  bounded by ")) << r.out;
  EXPECT_TRUE(contains(r.out, "the engine's own time, measured by the fit: 420.0 us a cycle")) << r.out;
  EXPECT_TRUE(contains(r.out, ", engine cycles ")) << r.out;

  const CommandResult none = run_command({cli_path(), "estimate", "horovod-32x4.yml", "--site", network_site(),
                                          "--network", "horovod-32x4.yml", "--workload", "resnet50"},
                                         here());
  EXPECT_EQ(none.status, 2);
  EXPECT_EQ(none.out, "");
  EXPECT_TRUE(contains(none.err, "horovod-32x4.yml"));
}

// The annotated example an admin starts from stays readable, network: section included.
TEST(EstimateCli, TheSiteExampleHasAUsableNetwork) {
  REQUIRE_CLI();
  const fs::path example = source_dir().parent_path().parent_path() / "contrib" / "site" / "site.example.yml";
  const CommandResult r = run_command({cli_path(), "estimate", "horovod-32x4.yml", "--site", example.string(),
                                       "--workload", "resnet101"},
                                      here());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "this job: 32 nodes x 4 GPUs = 128 ranks")) << r.out;
  EXPECT_TRUE(contains(r.out, "compute runs at 70% of its speed while a collective runs")) << r.out;
}

TEST(EstimateCli, UnknownWorkloadNamesTheModelsShipped) {
  REQUIRE_CLI();
  const CommandResult r = run_command({cli_path(), "estimate", "horovod-32x4.yml", "--site", network_site(),
                                       "--workload", "resnet9000"},
                                      here());
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "riseml estimate: --workload resnet9000: no such file")) << r.err;
  EXPECT_TRUE(contains(r.err, "resnet50, resnet101, inception_v3, vgg16")) << r.err;
}

}  // namespace
}  // namespace riseml::test
