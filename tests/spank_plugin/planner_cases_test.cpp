// One test per placement rule, on the real topologies where the rule shows.
#include <gtest/gtest.h>

#include <set>

#include "cpu_list.hpp"
#include "hwloc_loader.hpp"
#include "planner.hpp"
#include "topology_corpus.hpp"

namespace riseml::placement::test {
namespace {

const NodeTopology& topo(const std::string& name) {
  if (name == "testbed-fixture") return load_cached(RISEML_FIXTURE_TOPOLOGY);
  return load_cached(topology_dir() + "/" + name + ".xml");
}

std::string env_of(const TaskPlan& p, const std::string& name) {
  for (const auto& [k, v] : p.env) {
    if (k == name) return v;
  }
  return "<unset>";
}

std::vector<TaskPlan> plan(const std::string& name, unsigned tasks, PlanOptions options = {},
                           std::optional<std::vector<unsigned>> gpus = std::nullopt) {
  StepFacts facts;
  facts.local_tasks = tasks;
  facts.gpus = std::move(gpus);
  return make_plan(topo(name), facts, options);
}

bool has_warning(const TaskPlan& p, const std::string& part) {
  for (const auto& w : p.warnings) {
    if (w.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(PlannerCases, GpusFoundByPciClassWithoutOsDevices) {
  EXPECT_EQ(topo("psmgmt-jwb0004").gpus.size(), 4u);  // PCI devices only, no cuda/nvml
  EXPECT_EQ(topo("psmgmt-jrc0323").gpus.size(), 4u);
  EXPECT_EQ(topo("mpibind-coral-lassen").gpus.size(), 4u);
  EXPECT_EQ(topo("hwloc-nvidia-dgx2").gpus.size(), 16u);
  EXPECT_EQ(topo("mpibind-eas-tioga").gpus.size(), 8u);
  EXPECT_EQ(topo("psmgmt-mel3001").gpus.size(), 0u);
  // The BMC's VGA (ASPEED 1a03, Matrox 102b) is not a GPU.
  for (const auto& g : topo("hwloc-2socket-pci-wholeio").gpus) EXPECT_NE(g.pci_bus_id, "0000:05:03.0");
}

TEST(PlannerCases, OneGpuPerTaskInLocalityOrderWithPciIndices) {
  const auto p = plan("psmgmt-jwb0004", 4);
  // GPU 0000:44:00.0 sits on the first NUMA node, so local rank 0 gets it; CUDA numbers it 1 in
  // PCI order (0000:03:00.0 is 0).
  EXPECT_EQ(p[0].gpus, std::vector<std::string>{"0000:44:00.0"});
  EXPECT_EQ(env_of(p[0], "CUDA_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(env_of(p[0], "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
  EXPECT_EQ(p[0].mems, std::vector<unsigned>{1});  // the GPU's NUMA node
}

TEST(PlannerCases, SlurmNamesAreKeptForTheAllocatedGpus) {
  // Slurm with ConstrainDevices numbers the step's GPUs from 0: GPUs 2 and 3 are "0" and "1".
  StepFacts facts;
  facts.local_tasks = 2;
  facts.gpus = std::vector<unsigned>{2, 3};
  facts.gpu_names = {"0", "1"};
  const auto p = make_plan(topo("testbed-fixture"), facts, {});
  EXPECT_EQ(env_of(p[0], "CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(env_of(p[1], "CUDA_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(p[0].gpus, std::vector<std::string>{"0000:3a:00.0"});
}

TEST(PlannerCases, UuidsWhereKnownIndicesOnRequest) {
  EXPECT_EQ(env_of(plan("hwloc-nvidia-dgx2", 16)[0], "CUDA_VISIBLE_DEVICES").rfind("GPU-", 0), 0u);
  PlanOptions index;
  index.gpu_ids = GpuIds::index;
  const auto p = plan("hwloc-nvidia-dgx2", 16, index);
  for (const auto& t : p) EXPECT_EQ(env_of(t, "CUDA_VISIBLE_DEVICES").find("GPU-"), std::string::npos);
}

TEST(PlannerCases, FewerTasksThanGpusGetContiguousGroups) {
  const auto p = plan("hwloc-nvidia-dgx2", 2);
  ASSERT_EQ(p[0].gpus.size(), 8u);
  EXPECT_EQ(placement::split(env_of(p[0], "CUDA_VISIBLE_DEVICES"), ',').size(), 8u);
}

TEST(PlannerCases, MoreTasksThanGpusShareWithAWarning) {
  const auto p = plan("mpibind-cts1-pascal", 4);
  EXPECT_EQ(p[0].gpus, p[1].gpus);
  EXPECT_EQ(p[2].gpus, p[3].gpus);
  EXPECT_NE(p[0].gpus, p[2].gpus);
  EXPECT_TRUE(has_warning(p[0], "4 tasks share 2 GPU(s)"));
}

TEST(PlannerCases, AmdGpusUseRocrAndDropCudaVariables) {
  const auto p = plan("mpibind-eas-tioga", 8);
  EXPECT_EQ(env_of(p[0], "ROCR_VISIBLE_DEVICES").rfind("GPU-", 0), 0u);
  EXPECT_EQ(env_of(p[0], "CUDA_VISIBLE_DEVICES"), "<unset>");
  EXPECT_EQ(p[0].unset_env.front(), "CUDA_VISIBLE_DEVICES");
}

TEST(PlannerCases, MixedVendorsEachGetTheirVariable) {
  // hwloc-2socket-pci-wholeio: three NVIDIA GPUs and an AMD Radeon (VGA class, vendor 1002).
  const auto p = plan("hwloc-2socket-pci-wholeio", 4);
  int rocr = 0, cuda = 0;
  for (const auto& t : p) {
    rocr += env_of(t, "ROCR_VISIBLE_DEVICES") != "<unset>";
    cuda += env_of(t, "CUDA_VISIBLE_DEVICES") != "<unset>";
  }
  EXPECT_EQ(rocr, 1);
  EXPECT_EQ(cuda, 3);
}

TEST(PlannerCases, NearestNicThroughThePcieSwitch) {
  const auto p = plan("testbed-fixture", 4);
  EXPECT_EQ(p[0].nics, std::vector<std::string>{"mlx5_0"});
  EXPECT_EQ(p[1].nics, std::vector<std::string>{"mlx5_0"});
  EXPECT_EQ(p[2].nics, std::vector<std::string>{"mlx5_1"});
  EXPECT_EQ(env_of(p[2], "NCCL_IB_HCA"), "=mlx5_1:1");
  EXPECT_EQ(env_of(p[2], "UCX_NET_DEVICES"), "mlx5_1:1");
  EXPECT_EQ(env_of(p[2], "NCCL_SOCKET_IFNAME"), "=ib1");
}

TEST(PlannerCases, EquallyNearNicsAreSpread) {
  // Lassen: two NICs per socket, equally near both GPUs of the socket.
  const auto p = plan("mpibind-coral-lassen", 4);
  std::set<std::string> nics;
  for (const auto& t : p) nics.insert(t.nics.begin(), t.nics.end());
  EXPECT_EQ(nics.size(), 4u);
  // The fixture without mlx5_0: mlx5_1 (other switch) and mlx5_2 (host bridge) are equally far.
  PlanOptions o;
  o.nic_exclude = {"mlx5_0"};
  const auto q = plan("testbed-fixture", 4, o);
  EXPECT_NE(q[0].nics, q[1].nics);
}

TEST(PlannerCases, AdminExclusionsAndInclusions) {
  PlanOptions o;
  o.nic_include = {"mlx5_2"};
  for (const auto& t : plan("testbed-fixture", 4, o)) EXPECT_EQ(t.nics, std::vector<std::string>{"mlx5_2"});
  o.nic_include = {"mlx5_9"};
  const auto p = plan("testbed-fixture", 1, o);
  EXPECT_TRUE(has_warning(p[0], "nic_include names mlx5_9"));
  EXPECT_EQ(env_of(p[0], "NCCL_IB_DISABLE"), "1");
}

TEST(PlannerCases, NoInfinibandFallsBackToSockets) {
  // g4dn.metal: an EFA device (not usable by NCCL's IB transport) and eth0.
  const auto p = plan("mpibind-g4dnmetal", 8);
  EXPECT_TRUE(p[0].nics.empty());
  EXPECT_EQ(env_of(p[0], "NCCL_IB_DISABLE"), "1");
  EXPECT_EQ(env_of(p[0], "NCCL_SOCKET_IFNAME"), "=eth0");
  EXPECT_EQ(env_of(p[0], "UCX_NET_DEVICES"), "eth0");
  EXPECT_TRUE(has_warning(p[0], "NCCL and UCX use sockets over eth0"));
}

TEST(PlannerCases, CpuOnlyNodeSpreadsTasksOverSocketsAndNics) {
  const auto p = plan("psmgmt-mel3001", 2);
  EXPECT_TRUE(p[0].gpus.empty());
  EXPECT_EQ(env_of(p[0], "CUDA_VISIBLE_DEVICES"), "<unset>");
  EXPECT_NE(p[0].mems, p[1].mems);  // one socket each
  EXPECT_NE(p[0].nics, p[1].nics);
}

TEST(PlannerCases, EnvironmentGroupsCanBeTurnedOff) {
  PlanOptions o;
  o.env = EnvChoice{true, false, false, false, false, false};
  const auto p = plan("testbed-fixture", 4, o);
  EXPECT_EQ(p[0].env.size(), 2u);  // CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER
}

TEST(PlannerCases, ImpossibleStepsAreErrorsThatSayWhy) {
  try {
    plan("psmgmt-jwb0004", 1, {}, std::vector<unsigned>{4});
    ADD_FAILURE() << "no error";
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("GPU 4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("topology="), std::string::npos) << e.what();
  }
  StepFacts facts;
  facts.cpus = std::vector<unsigned>{100000};
  EXPECT_THROW(make_plan(topo("testbed-fixture"), facts, {}), PlanError);
  facts = StepFacts{};
  facts.local_tasks = 0;
  EXPECT_THROW(make_plan(topo("testbed-fixture"), facts, {}), PlanError);
}

TEST(PlannerCases, UnreadableOrBrokenTopologyIsAnError) {
  NodeTopology t;
  std::string error;
  EXPECT_FALSE(load_topology("/nonexistent/node.xml", t, error));
  EXPECT_NE(error.find("/nonexistent/node.xml"), std::string::npos) << error;
  EXPECT_FALSE(load_topology(RISEML_EXPECTED_DIR "/README.md", t, error));
  EXPECT_NE(error.find("README.md"), std::string::npos) << error;
}

}  // namespace
}  // namespace riseml::placement::test
