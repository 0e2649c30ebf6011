// The SPANK callbacks of spank_riseml.so driven by a fake Slurm (fake_spank.cpp): contexts,
// options, plugstack arguments, skipped steps, errors by on_error=, and the per-task environment.
#include <gtest/gtest.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cpu_list.hpp"
#include "fake_spank.hpp"
#include "scratch_folder.hpp"

extern "C" {
int slurm_spank_init(spank_t sp, int argc, char** argv);
int slurm_spank_init_post_opt(spank_t sp, int argc, char** argv);
int slurm_spank_user_init(spank_t sp, int argc, char** argv);
int slurm_spank_task_init(spank_t sp, int argc, char** argv);
int slurm_spank_exit(spank_t sp, int argc, char** argv);
}

namespace riseml::spank::test {
namespace {

const std::string fixture = RISEML_FIXTURE_TOPOLOGY;
const std::string helper = RISEML_TOPOLOGY_HELPER;

bool contains(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& l : lines) {
    if (l.find(part) != std::string::npos) return true;
  }
  return false;
}

class SpankGlue : public ::testing::Test {
 protected:
  void SetUp() override { reset_fake(); }
  void TearDown() override { slurm_spank_exit(nullptr, 0, nullptr); }

  // The build's riseml-topology and a cache of this test's own, unless the test names others.
  int init(std::vector<std::string> args) {
    auto given = [&](const std::string& key) {
      for (const auto& a : args) {
        if (a.rfind(key + "=", 0) == 0) return true;
      }
      return false;
    };
    if (!given("topology_helper")) args.push_back("topology_helper=" + helper);
    if (!given("topology_cache")) args.push_back("topology_cache=" + scratch_.path());
    args_ = std::move(args);
    argv_.clear();
    for (auto& a : args_) argv_.push_back(a.data());
    return slurm_spank_init(nullptr, static_cast<int>(argv_.size()), argv_.data());
  }
  int option(const char* value) {
    for (const auto& o : fake().options) {
      if (std::string(o.name) == "riseml-bind") return o.cb(o.val, value, fake().context == S_CTX_REMOTE);
    }
    ADD_FAILURE() << "--riseml-bind not registered";
    return -1;
  }
  // post_opt + user_init for a step of `tasks` local tasks with Slurm's GPUs 0..tasks-1.
  int start_step(unsigned tasks) {
    fake().local_tasks = tasks;
    std::string gpus;
    for (unsigned i = 0; i < tasks; ++i) gpus += (i ? "," : "") + std::to_string(i);
    fake().env["SLURM_STEP_GPUS"] = gpus;
    fake().env["CUDA_VISIBLE_DEVICES"] = gpus;
    EXPECT_EQ(slurm_spank_init_post_opt(nullptr, 0, nullptr), 0);
    return slurm_spank_user_init(nullptr, 0, nullptr);
  }
  // task_init of one task on a copy of the step's environment; returns the task's environment.
  std::map<std::string, std::string> task(int id, int* rc = nullptr) {
    const auto step_env = fake().env;
    fake().task_id = id;
    const int r = slurm_spank_task_init(nullptr, 0, nullptr);
    if (rc != nullptr) *rc = r;
    auto env = fake().env;
    fake().env = step_env;
    return env;
  }

  // A step with `args` and --riseml-bind=auto on one task; user_init's return value.
  int step_with(const std::vector<std::string>& args) {
    slurm_spank_exit(nullptr, 0, nullptr);
    reset_fake();
    EXPECT_EQ(init(args), 0) << (fake().errors.empty() ? "" : fake().errors.back());
    EXPECT_EQ(option("auto"), 0);
    return start_step(1);
  }

  placement::test::ScratchFolder scratch_;
  std::vector<std::string> args_;
  std::vector<char*> argv_;
};

TEST_F(SpankGlue, OptionRegisteredWhereUsersTypeIt) {
  for (auto ctx : {S_CTX_LOCAL, S_CTX_ALLOCATOR, S_CTX_REMOTE}) {
    reset_fake();
    fake().context = ctx;
    EXPECT_EQ(init({}), 0);
    ASSERT_EQ(fake().options.size(), 1u);
    EXPECT_STREQ(fake().options[0].name, "riseml-bind");
  }
  reset_fake();
  fake().context = S_CTX_SLURMD;
  EXPECT_EQ(init({"colour=blue"}), 0);  // slurmd: nothing to do, nothing checked
  EXPECT_TRUE(fake().options.empty());
}

TEST_F(SpankGlue, BadOptionValueIsRefusedWithTheChoices) {
  fake().context = S_CTX_LOCAL;
  ASSERT_EQ(init({}), 0);
  EXPECT_EQ(option("bogus"), -1);
  EXPECT_TRUE(contains(fake().errors, "riseml: --riseml-bind=bogus: 'bogus' is not a choice; use auto"));
  EXPECT_EQ(option(nullptr), -1);
  EXPECT_EQ(option("auto,verbose"), 0);
}

TEST_F(SpankGlue, BadPlugstackArgumentFailsInit) {
  EXPECT_EQ(init({"topology=relative.xml"}), -1);
  EXPECT_TRUE(contains(fake().errors, "riseml: topology=relative.xml: give the absolute path"));
  EXPECT_TRUE(contains(fake().errors, "plugstack.conf"));
}

TEST_F(SpankGlue, EachTaskGetsItsGpuNicAndRank) {
  ASSERT_EQ(init({"topology=" + fixture, "nic_exclude=mlx5_2"}), 0);
  ASSERT_EQ(option("env"), 0);
  ASSERT_EQ(start_step(4), 0);
  for (int t = 0; t < 4; ++t) {
    auto env = task(t);
    EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], std::to_string(t));
    EXPECT_EQ(env["RISEML_LOCAL_RANK"], std::to_string(t));
    EXPECT_EQ(env["RISEML_LOCAL_SIZE"], "4");
    EXPECT_EQ(env["HOROVOD_RANK"], std::to_string(t));  // one node: global = local
    EXPECT_EQ(env["HOROVOD_SIZE"], "4");
    EXPECT_EQ(env["HOROVOD_LOCAL_RANK"], std::to_string(t));
    EXPECT_EQ(env["HOROVOD_LOCAL_SIZE"], "4");
    EXPECT_EQ(env["HOROVOD_CROSS_RANK"], "0");
    EXPECT_EQ(env["HOROVOD_CROSS_SIZE"], "1");
    EXPECT_EQ(env["NCCL_IB_HCA"], t < 2 ? "=mlx5_0:1" : "=mlx5_1:1");
    EXPECT_EQ(env["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
  }
  EXPECT_TRUE(fake().errors.empty());
}

TEST_F(SpankGlue, EachTaskGetsHorovodsRankVariables) {
  // Node 1 of a 2-node x 2-task step (srun -N2 --ntasks-per-node=2): global ranks 2 and 3. The
  // step's own HOROVOD_* (inherited from srun's environment) are replaced, as horovodrun does.
  ASSERT_EQ(init({"topology=" + fixture}), 0);
  ASSERT_EQ(option("env"), 0);
  fake().nnodes = 2;
  fake().node_id = 1;
  fake().total_tasks = 4;
  fake().first_global_id = 2;
  fake().env["SLURM_STEP_TASKS_PER_NODE"] = "2(x2)";
  fake().env["HOROVOD_RANK"] = "0";
  fake().env["HOROVOD_CROSS_SIZE"] = "9";
  ASSERT_EQ(start_step(2), 0);
  for (int t = 0; t < 2; ++t) {
    fake().env["SLURM_PROCID"] = std::to_string(2 + t);  // slurmstepd sets it before task_init
    auto env = task(t);
    EXPECT_EQ(env["HOROVOD_RANK"], std::to_string(2 + t));
    EXPECT_EQ(env["HOROVOD_SIZE"], "4");
    EXPECT_EQ(env["HOROVOD_LOCAL_RANK"], std::to_string(t));
    EXPECT_EQ(env["HOROVOD_LOCAL_SIZE"], "2");
    EXPECT_EQ(env["HOROVOD_CROSS_RANK"], "1");
    EXPECT_EQ(env["HOROVOD_CROSS_SIZE"], "2");
    EXPECT_EQ(env["RISEML_LOCAL_RANK"], std::to_string(t));  // RISEML_* stay
    EXPECT_EQ(env["RISEML_NODE_ID"], "1");
  }
  EXPECT_TRUE(fake().errors.empty());
}

TEST_F(SpankGlue, HorovodCrossVariablesOnUnevenNodes) {
  // srun -N2 -n3: node 0 has ranks 0 and 1, node 1 has rank 2. Local rank 1 exists on node 0
  // only, so its cross communicator holds one rank.
  ASSERT_EQ(init({"topology=" + fixture}), 0);
  ASSERT_EQ(option("env"), 0);
  fake().nnodes = 2;
  fake().total_tasks = 3;
  fake().env["SLURM_STEP_TASKS_PER_NODE"] = "2,1";
  ASSERT_EQ(start_step(2), 0);
  auto env = task(1);
  EXPECT_EQ(env["HOROVOD_RANK"], "1");
  EXPECT_EQ(env["HOROVOD_CROSS_RANK"], "0");
  EXPECT_EQ(env["HOROVOD_CROSS_SIZE"], "1");
  env = task(0);
  EXPECT_EQ(env["HOROVOD_CROSS_RANK"], "0");
  EXPECT_EQ(env["HOROVOD_CROSS_SIZE"], "2");
  // Without every node's count the cross pair stays unset, and verbose says why.
  slurm_spank_exit(nullptr, 0, nullptr);
  reset_fake();
  ASSERT_EQ(init({"topology=" + fixture}), 0);
  ASSERT_EQ(option("env,verbose"), 0);
  fake().nnodes = 2;
  fake().total_tasks = 3;
  ASSERT_EQ(start_step(2), 0);
  int rc = -1;
  env = task(1, &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(env["HOROVOD_RANK"], "1");
  EXPECT_EQ(env["HOROVOD_LOCAL_SIZE"], "2");
  EXPECT_EQ(env.count("HOROVOD_CROSS_RANK"), 0u);
  EXPECT_EQ(env.count("HOROVOD_CROSS_SIZE"), 0u);
  EXPECT_TRUE(contains(fake().user_log, "HOROVOD_CROSS_RANK and HOROVOD_CROSS_SIZE not set: SLURM_STEP_TASKS_PER_NODE"));
  EXPECT_TRUE(contains(fake().user_log, "HOROVOD_RANK=1 HOROVOD_SIZE=3"));  // the verbose line
  EXPECT_TRUE(fake().errors.empty());
}

TEST_F(SpankGlue, HorovodVariablesFollowTheEnvGroupAndHeterogeneousJobs) {
  ASSERT_EQ(init({"topology=" + fixture, "env=gpu,riseml"}), 0);
  ASSERT_EQ(option("env"), 0);
  ASSERT_EQ(start_step(1), 0);
  auto env = task(0);
  EXPECT_EQ(env.count("HOROVOD_RANK"), 0u);
  EXPECT_EQ(env["RISEML_LOCAL_RANK"], "0");
  slurm_spank_exit(nullptr, 0, nullptr);
  reset_fake();
  ASSERT_EQ(init({"topology=" + fixture}), 0);
  ASSERT_EQ(option("env"), 0);
  fake().env["SLURM_HET_SIZE"] = "2";
  ASSERT_EQ(start_step(1), 0);
  int rc = -1;
  env = task(0, &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(env.count("HOROVOD_RANK"), 0u);
  EXPECT_EQ(env["RISEML_LOCAL_RANK"], "0");
  EXPECT_TRUE(fake().errors.empty());
}

TEST_F(SpankGlue, SbatchOptionThroughTheEnvironmentWorksLikeSrun) {
  // Slurm turns #SBATCH --riseml-bind=auto into SLURM_SPANK__SLURM_SPANK_OPTION_riseml_riseml_bind
  // and calls the same callback in srun and slurmstepd; the remote call must be enough.
  ASSERT_EQ(init({"topology=" + fixture}), 0);
  ASSERT_EQ(option("env,verbose"), 0);
  ASSERT_EQ(start_step(2), 0);
  task(0);
  task(1);
  EXPECT_TRUE(contains(fake().user_log, "task=1 gpus=0000:1b:00.0"));
}

TEST_F(SpankGlue, DefaultIsNoneAndNoneTouchesNothing) {
  ASSERT_EQ(init({"topology=" + fixture}), 0);
  ASSERT_EQ(start_step(2), 0);
  EXPECT_EQ(task(0).count("RISEML_LOCAL_RANK"), 0u);
  EXPECT_EQ(task(0).count("HOROVOD_RANK"), 0u);
  slurm_spank_exit(nullptr, 0, nullptr);
  reset_fake();
  ASSERT_EQ(init({"topology=" + fixture}), 0);
  ASSERT_EQ(option("none"), 0);
  ASSERT_EQ(start_step(2), 0);
  auto env = task(1);
  EXPECT_EQ(env.count("RISEML_LOCAL_RANK"), 0u);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "0,1");  // Slurm's, untouched
}

TEST_F(SpankGlue, AdminDefaultApplies) {
  ASSERT_EQ(init({"topology=" + fixture, "default=env"}), 0);
  ASSERT_EQ(start_step(2), 0);
  EXPECT_EQ(task(1)["RISEML_LOCAL_RANK"], "1");
}

TEST_F(SpankGlue, BatchAndExternStepsAreSkipped) {
  for (std::uint32_t step : {0xfffffffbU, 0xfffffffcU, 0xfffffffaU}) {
    slurm_spank_exit(nullptr, 0, nullptr);
    reset_fake();
    ASSERT_EQ(init({"topology=/nonexistent.xml"}), 0);
    ASSERT_EQ(option("auto"), 0);
    fake().step_id = step;
    EXPECT_EQ(start_step(1), 0) << step;
    EXPECT_EQ(task(0).count("RISEML_LOCAL_RANK"), 0u);
    EXPECT_TRUE(fake().errors.empty());
  }
}

TEST_F(SpankGlue, UnreadableTopologyFailsOrWarnsByAdminChoice) {
  ASSERT_EQ(init({"topology=/nonexistent/node.xml"}), 0);
  ASSERT_EQ(option("auto"), 0);
  EXPECT_EQ(start_step(1), -1);
  EXPECT_TRUE(contains(fake().errors, "riseml: cannot read topology file /nonexistent/node.xml"));
  EXPECT_TRUE(contains(fake().errors, "fix topology= in plugstack.conf"));
  slurm_spank_exit(nullptr, 0, nullptr);
  reset_fake();
  ASSERT_EQ(init({"topology=/nonexistent/node.xml", "on_error=warn"}), 0);
  ASSERT_EQ(option("auto"), 0);
  EXPECT_EQ(start_step(1), 0);
  EXPECT_TRUE(contains(fake().errors, "on_error=warn"));
  int rc = -1;
  EXPECT_EQ(task(0, &rc).count("RISEML_LOCAL_RANK"), 0u);
  EXPECT_EQ(rc, 0);
}

TEST_F(SpankGlue, TopologyThatCrashesHwlocFailsOrWarnsButNeverCrashesSlurmstepd) {
  // The XML of issue 11: hwloc 2.9 segfaults on it. Before riseml-topology it did so in here.
  const std::string bad = std::string(RISEML_BAD_TOPOLOGY_DIR) + "/pu-without-nodeset.xml";
  EXPECT_EQ(step_with({"topology=" + bad}), -1);
  ASSERT_EQ(fake().errors.size(), 1u);
  const std::string& e = fake().errors[0];
  EXPECT_TRUE(e.rfind("riseml: hwloc crashed reading " + bad, 0) == 0 || e.rfind("riseml: hwloc could not load " + bad, 0) == 0 ||
              e.rfind("riseml: hwloc cannot use " + bad, 0) == 0)
      << e;
  EXPECT_TRUE(contains(fake().errors, "; check it with `riseml-plan --topology " + bad + " --tasks 1`")) << e;
  EXPECT_TRUE(contains(fake().errors, "lstopo --of xml")) << e;
  EXPECT_EQ(step_with({"topology=" + bad, "on_error=warn"}), 0);
  EXPECT_TRUE(contains(fake().errors, "Continuing without --riseml-bind (on_error=warn)"));
  int rc = -1;
  EXPECT_EQ(task(0, &rc).count("RISEML_LOCAL_RANK"), 0u);
  EXPECT_EQ(rc, 0);
}

TEST_F(SpankGlue, EveryWayTheHelperFailsIsAMessageAndTheAdminsChoice) {
  struct Case {
    std::string helper;  // script body, or a path
    std::vector<std::string> extra;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"kill -SEGV $$", {}, "riseml: hwloc crashed reading " + fixture + " (signal 11, Segmentation fault, in "},
      {"exec sleep 600", {"topology_timeout=1"}, "riseml: reading " + fixture + " took longer than 1 s ("},
      {"echo garbage", {}, " gave no usable topology for " + fixture + " (line 1: not riseml-topology output"},
      {"exec yes", {}, " printed more than 16 MiB for " + fixture},
      {"echo 'riseml-topology: hwloc could not load this' >&2; exit 1", {}, "riseml: hwloc could not load this; "},
      {"/nonexistent/riseml-topology", {}, "riseml: cannot run the topology helper /nonexistent/riseml-topology: No such file"},
  };
  int n = 0;
  for (const Case& c : cases) {
    const std::string prog = c.helper.front() == '/' ? c.helper : scratch_.script("h" + std::to_string(n++), c.helper);
    for (const char* on_error : {"fail", "warn"}) {
      std::vector<std::string> args = {"topology=" + fixture, "topology_helper=" + prog, std::string("on_error=") + on_error};
      args.insert(args.end(), c.extra.begin(), c.extra.end());
      const auto start = std::chrono::steady_clock::now();
      const int rc = step_with(args);
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << c.helper;
      EXPECT_EQ(rc, std::string(on_error) == "fail" ? -1 : 0) << c.helper;
      ASSERT_EQ(fake().errors.size(), 1u) << c.helper;
      EXPECT_TRUE(contains(fake().errors, c.says)) << fake().errors[0];
      EXPECT_EQ(fake().errors[0].find("riseml: "), 0u) << fake().errors[0];
      const bool warned = contains(fake().errors, "Continuing without --riseml-bind (on_error=warn)");
      EXPECT_EQ(warned, std::string(on_error) == "warn") << fake().errors[0];
      if (rc == 0) {
        int task_rc = -1;
        EXPECT_EQ(task(0, &task_rc).count("RISEML_LOCAL_RANK"), 0u);
        EXPECT_EQ(task_rc, 0);
      }
    }
  }
}

TEST_F(SpankGlue, LaterStepsUseTheCacheInsteadOfTheHelper) {
  const std::string runs = scratch_.path() + "/runs";
  const std::string counting = scratch_.script("counting", "echo run >> " + runs + "; exec " + helper + " \"$@\"");
  auto count = [&] {
    std::ifstream in(runs);
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  };
  for (int step = 0; step < 3; ++step) {
    EXPECT_EQ(step_with({"topology=" + fixture, "topology_helper=" + counting}), 0);
    EXPECT_EQ(task(0)["RISEML_LOCAL_SIZE"], "1");
  }
  EXPECT_EQ(count(), 1);
  EXPECT_EQ(step_with({"topology=" + fixture, "topology_helper=" + counting, "topology_cache=none"}), 0);
  EXPECT_EQ(count(), 2);
}

TEST_F(SpankGlue, HelperArgumentsAreChecked) {
  EXPECT_EQ(init({"topology_helper=riseml-topology"}), -1);
  EXPECT_TRUE(contains(fake().errors, "riseml: topology_helper=riseml-topology: give the absolute path of riseml-topology"));
  for (const char* bad : {"topology_timeout=0", "topology_timeout=601", "topology_timeout=5s", "topology_timeout="}) {
    reset_fake();
    EXPECT_EQ(init({bad}), -1) << bad;
    EXPECT_TRUE(contains(fake().errors, "give whole seconds, 1 to 600")) << bad;
  }
  reset_fake();
  EXPECT_EQ(init({"topology_cache=cache"}), -1);
  EXPECT_TRUE(contains(fake().errors, "topology_cache=cache: give an absolute folder"));
}

TEST_F(SpankGlue, GpuTheTopologyLacksFailsTheStep) {
  ASSERT_EQ(init({"topology=" + fixture}), 0);
  ASSERT_EQ(option("auto"), 0);
  EXPECT_EQ(start_step(6), -1);
  EXPECT_TRUE(contains(fake().errors, "the step was given GPU 4 but the topology"));
}

TEST_F(SpankGlue, SlurmsNoDevFilesMeansNoGpu) {
  ASSERT_EQ(init({"topology=" + fixture}), 0);
  ASSERT_EQ(option("env"), 0);
  fake().local_tasks = 1;
  fake().env["CUDA_VISIBLE_DEVICES"] = "NoDevFiles";
  ASSERT_EQ(slurm_spank_init_post_opt(nullptr, 0, nullptr), 0);
  ASSERT_EQ(slurm_spank_user_init(nullptr, 0, nullptr), 0);
  auto env = task(0);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "NoDevFiles");
  EXPECT_EQ(env["RISEML_PLAN"].find("gpus=-"), env["RISEML_PLAN"].find(" gpus=") + 1);
}

TEST_F(SpankGlue, GpusNamedByUuidAreMatchedToTheTopology) {
  const std::string dgx2 = std::string(RISEML_TOPOLOGY_DIR_DEFAULT) + "/hwloc-nvidia-dgx2.xml";
  ASSERT_EQ(init({"topology=" + dgx2}), 0);
  ASSERT_EQ(option("env"), 0);
  fake().local_tasks = 2;
  const std::string a = "GPU-d3977428-7a30-086b-2e20-5c1eeed647c6", b = "GPU-5bfda7ef-6aec-a775-5ae1-a1c3dcaef094";
  fake().env["CUDA_VISIBLE_DEVICES"] = a + "," + b;
  ASSERT_EQ(slurm_spank_init_post_opt(nullptr, 0, nullptr), 0);
  ASSERT_EQ(slurm_spank_user_init(nullptr, 0, nullptr), 0) << (fake().errors.empty() ? "" : fake().errors.back());
  const std::string t0 = task(0)["CUDA_VISIBLE_DEVICES"], t1 = task(1)["CUDA_VISIBLE_DEVICES"];
  EXPECT_NE(t0, t1);
  EXPECT_TRUE((t0 == a && t1 == b) || (t0 == b && t1 == a)) << t0 << " " << t1;
  slurm_spank_exit(nullptr, 0, nullptr);
  reset_fake();
  ASSERT_EQ(init({"topology=" + dgx2}), 0);
  ASSERT_EQ(option("auto"), 0);
  fake().env["CUDA_VISIBLE_DEVICES"] = "MIG-0a1b";
  ASSERT_EQ(slurm_spank_init_post_opt(nullptr, 0, nullptr), 0);
  EXPECT_EQ(slurm_spank_user_init(nullptr, 0, nullptr), -1);
  EXPECT_TRUE(contains(fake().errors, "names MIG-0a1b, which is neither a GPU number nor a UUID"));
}

TEST_F(SpankGlue, AutoBindsTheTaskCpusAndMemory) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  ASSERT_EQ(init({"topology=" + fixture}), 0);
  ASSERT_EQ(option("auto"), 0);
  ASSERT_EQ(start_step(2), 0);
  int rc = -1;
  auto env = task(0, &rc);
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
  sched_setaffinity(0, sizeof before, &before);
  syscall(SYS_set_mempolicy, MPOL_DEFAULT, nullptr, 0);
  EXPECT_EQ(rc, 0) << (fake().errors.empty() ? "" : fake().errors.back());
  // The process now runs exactly on the CPUs of task 0's plan.
  const std::string plan = env["RISEML_PLAN"];
  const std::size_t at = plan.find(" cpus=");
  ASSERT_NE(at, std::string::npos) << plan;
  const auto planned = placement::parse_number_list(plan.substr(at + 6, plan.find(' ', at + 1) - at - 6));
  ASSERT_TRUE(planned) << plan;
  cpu_set_t want;
  CPU_ZERO(&want);
  for (unsigned c : *planned) CPU_SET(c, &want);
  EXPECT_TRUE(CPU_EQUAL(&want, &after)) << plan;
  if (CPU_COUNT(&before) >= 2) {
    EXPECT_LT(CPU_COUNT(&after), CPU_COUNT(&before));
  }
}

}  // namespace
}  // namespace riseml::spank::test
