// Property checks over every topology and many step shapes: disjoint CPUs, GPU-local CPUs,
// nearest NIC, every allocated GPU used, nothing outside the allocation, consistent environment.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "cpu_list.hpp"
#include "planner.hpp"
#include "topology_corpus.hpp"

namespace riseml::placement::test {
namespace {

std::string env_of(const TaskPlan& p, const std::string& name) {
  for (const auto& [k, v] : p.env) {
    if (k == name) return v;
  }
  return "<unset>";
}

std::set<unsigned> all_pus(const NodeTopology& topo) {
  std::set<unsigned> s;
  for (const Core& c : topo.cores) s.insert(c.pus.begin(), c.pus.end());
  return s;
}

void check(const NodeTopology& topo, const StepFacts& facts, const PlanOptions& options) {
  const std::vector<TaskPlan> plans = make_plan(topo, facts, options);
  const unsigned n = facts.local_tasks;
  ASSERT_EQ(plans.size(), n);

  // The allocation and the CPUs the step may use.
  std::vector<unsigned> alloc;
  if (facts.gpus) {
    alloc = *facts.gpus;
  } else {
    for (unsigned i = 0; i < topo.gpus.size(); ++i) alloc.push_back(i);
  }
  std::set<unsigned> allowed;
  const std::set<unsigned> known = all_pus(topo);
  if (facts.cpus) {
    for (unsigned c : *facts.cpus) {
      if (known.count(c)) allowed.insert(c);
    }
  } else {
    allowed = known;
  }
  std::size_t usable_cores = 0;
  for (const Core& c : topo.cores) {
    usable_cores += std::any_of(c.pus.begin(), c.pus.end(), [&](unsigned p) { return allowed.count(p) != 0; }) ? 1 : 0;
  }

  std::map<unsigned, unsigned> gpu_users;
  std::map<unsigned, unsigned> cpu_users;
  for (unsigned t = 0; t < n; ++t) {
    const TaskPlan& p = plans[t];
    SCOPED_TRACE("task " + std::to_string(t));
    EXPECT_EQ(p.task, t);
    // GPUs: only from the allocation, spread as one each / contiguous groups / shared.
    for (unsigned g : p.gpu_indices) {
      EXPECT_NE(std::find(alloc.begin(), alloc.end(), g), alloc.end()) << "GPU " << g << " is outside the allocation";
      ++gpu_users[g];
    }
    if (!alloc.empty()) {
      if (n >= alloc.size()) {
        EXPECT_EQ(p.gpu_indices.size(), 1u);
      } else {
        EXPECT_GE(p.gpu_indices.size(), alloc.size() / n);
        EXPECT_LE(p.gpu_indices.size(), (alloc.size() + n - 1) / n);
      }
    } else {
      EXPECT_TRUE(p.gpu_indices.empty());
    }
    // CPUs: inside the step's, never empty.
    EXPECT_FALSE(p.cpus.empty());
    for (unsigned c : p.cpus) {
      EXPECT_TRUE(allowed.count(c)) << "CPU " << c << " is not the step's";
      ++cpu_users[c];
    }
    // GPU-local CPUs: some CPU local to the GPU, or a warning that says why not.
    std::set<unsigned> local;
    for (unsigned g : p.gpu_indices) local.insert(topo.gpus[g].local_pus.begin(), topo.gpus[g].local_pus.end());
    if (!local.empty()) {
      const bool near = std::any_of(p.cpus.begin(), p.cpus.end(), [&](unsigned c) { return local.count(c) != 0; });
      const bool warned = std::any_of(p.warnings.begin(), p.warnings.end(), [](const std::string& w) {
        return w.find("is local to GPU") != std::string::npos;
      });
      EXPECT_TRUE(near || warned) << "no CPU near its GPU and no warning";
      EXPECT_FALSE(near && warned);
    }
    // Memory: NUMA nodes that hold the task's CPUs.
    if (!topo.numa_nodes.empty()) {
      EXPECT_FALSE(p.mems.empty());
    }
    for (unsigned m : p.mems) {
      const auto node = std::find_if(topo.numa_nodes.begin(), topo.numa_nodes.end(),
                                     [&](const NumaNode& nn) { return nn.os_index == m; });
      ASSERT_NE(node, topo.numa_nodes.end());
      EXPECT_TRUE(std::any_of(p.cpus.begin(), p.cpus.end(), [&](unsigned c) {
        return std::find(node->pus.begin(), node->pus.end(), c) != node->pus.end();
      })) << "NUMA node " << m << " holds none of the task's CPUs";
    }
    // NICs: allowed ones, each the nearest to one of the task's GPUs.
    std::vector<const Nic*> eligible;
    for (const Nic& nic : topo.nics) {
      const bool in = options.nic_include.empty() ||
                      std::find(options.nic_include.begin(), options.nic_include.end(), nic.name) != options.nic_include.end();
      const bool out = std::find(options.nic_exclude.begin(), options.nic_exclude.end(), nic.name) != options.nic_exclude.end();
      if (in && !out) eligible.push_back(&nic);
    }
    if (!eligible.empty()) {
      EXPECT_FALSE(p.nics.empty());
    }
    for (const std::string& name : p.nics) {
      const auto nic = std::find_if(eligible.begin(), eligible.end(), [&](const Nic* e) { return e->name == name; });
      ASSERT_NE(nic, eligible.end()) << name << " is excluded or unknown";
      if (p.gpu_indices.empty()) continue;
      bool nearest_for_some_gpu = false;
      for (unsigned g : p.gpu_indices) {
        std::size_t best = 0;
        for (const Nic* e : eligible) best = std::max(best, common_depth(topo.gpus[g].path, e->path));
        nearest_for_some_gpu = nearest_for_some_gpu || common_depth(topo.gpus[g].path, (*nic)->path) == best;
      }
      EXPECT_TRUE(nearest_for_some_gpu) << name << " is not the nearest NIC of any of the task's GPUs";
    }
    // Environment.
    if (options.env.gpu && !p.gpu_indices.empty()) {
      std::size_t nvidia = 0, amd = 0;
      for (unsigned g : p.gpu_indices) (topo.gpus[g].vendor == GpuVendor::amd ? amd : nvidia)++;
      if (nvidia) {
        EXPECT_EQ(split(env_of(p, "CUDA_VISIBLE_DEVICES"), ',').size(), nvidia);
        EXPECT_EQ(env_of(p, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
      }
      if (amd) {
        EXPECT_EQ(split(env_of(p, "ROCR_VISIBLE_DEVICES"), ',').size(), amd);
      }
    }
    if (options.env.nccl) {
      const std::string hca = env_of(p, "NCCL_IB_HCA");
      if (p.nics.empty()) {
        EXPECT_EQ(hca, "<unset>");
        EXPECT_EQ(env_of(p, "NCCL_IB_DISABLE"), "1");
      } else {
        ASSERT_EQ(hca.substr(0, 1), "=") << "NCCL_IB_HCA without '=' also matches mlx5_10 for mlx5_1";
        for (const std::string& entry : split(hca.substr(1), ',')) {
          const std::string dev = entry.substr(0, entry.find(':'));
          EXPECT_NE(entry.find(':'), std::string::npos) << entry;
          EXPECT_NE(std::find(p.nics.begin(), p.nics.end(), dev), p.nics.end()) << entry;
        }
      }
      const std::string ifname = env_of(p, "NCCL_SOCKET_IFNAME");
      EXPECT_TRUE(ifname != "=lo" && ifname.rfind("=docker", 0) != 0) << ifname;
    }
    if (options.env.omp) {
      EXPECT_GE(std::stoul(env_of(p, "OMP_NUM_THREADS")), 1u);
    }
    if (options.env.riseml) {
      EXPECT_EQ(env_of(p, "RISEML_LOCAL_RANK"), std::to_string(t));
      EXPECT_EQ(env_of(p, "RISEML_LOCAL_SIZE"), std::to_string(n));
      EXPECT_EQ(env_of(p, "RISEML_NODE_ID"), std::to_string(facts.node_id));
      EXPECT_EQ(env_of(p, "RISEML_PLAN"), one_line(p));
    }
  }
  // GPU-local CPUs: where a GPU locality has at least one CPU unit (core, or PU when cores are
  // short) per task that uses it, every such task gets some of them.
  if (allowed.size() >= n) {
    std::map<std::set<unsigned>, unsigned> domain_tasks;
    std::vector<std::set<unsigned>> domain_of(n);
    for (unsigned t = 0; t < n; ++t) {
      for (unsigned g : plans[t].gpu_indices) domain_of[t].insert(topo.gpus[g].local_pus.begin(), topo.gpus[g].local_pus.end());
      ++domain_tasks[domain_of[t]];
    }
    for (unsigned t = 0; t < n; ++t) {
      if (domain_of[t].empty()) continue;
      std::size_t local_units = 0;
      for (const Core& c : topo.cores) {
        std::vector<unsigned> mine;
        for (unsigned pu : c.pus) {
          if (allowed.count(pu)) mine.push_back(pu);
        }
        const bool local = !mine.empty() && std::all_of(mine.begin(), mine.end(), [&](unsigned pu) { return domain_of[t].count(pu) != 0; });
        if (local) local_units += usable_cores >= n ? 1 : mine.size();
      }
      if (local_units >= domain_tasks[domain_of[t]]) {
        const bool near = std::any_of(plans[t].cpus.begin(), plans[t].cpus.end(), [&](unsigned c) { return domain_of[t].count(c) != 0; });
        EXPECT_TRUE(near) << "task " << t << " has no CPU near its GPU though its locality has " << local_units
                          << " free units for " << domain_tasks[domain_of[t]] << " tasks";
      }
    }
  }
  // Every allocated GPU is used; each by one task unless tasks outnumber GPUs.
  for (unsigned g : alloc) {
    EXPECT_GE(gpu_users[g], 1u) << "allocated GPU " << g << " unused";
    if (n <= alloc.size()) {
      EXPECT_EQ(gpu_users[g], 1u) << "GPU " << g << " given twice";
    }
  }
  // Disjoint CPUs whenever there is at least one CPU per task; then every CPU is used.
  if (allowed.size() >= n) {
    for (const auto& [c, users] : cpu_users) EXPECT_EQ(users, 1u) << "CPU " << c << " given to " << users << " tasks";
    EXPECT_EQ(cpu_users.size(), allowed.size()) << "some of the step's CPUs are unused";
  }
  // Whole cores first: with a core per task, no core is split between tasks.
  if (usable_cores >= n) {
    for (const Core& c : topo.cores) {
      std::set<unsigned> owners;
      for (unsigned pu : c.pus) {
        for (unsigned t = 0; t < n; ++t) {
          if (std::find(plans[t].cpus.begin(), plans[t].cpus.end(), pu) != plans[t].cpus.end()) owners.insert(t);
        }
      }
      EXPECT_LE(owners.size(), 1u) << "a core is split between tasks";
    }
  }
}

std::vector<std::pair<std::string, std::string>> all_topologies() {
  std::vector<std::pair<std::string, std::string>> all;
  for (const auto& kv : corpus_files()) all.push_back(kv);
  all.emplace_back("testbed-fixture", RISEML_FIXTURE_TOPOLOGY);
  return all;
}

TEST(PlanProperties, EveryTopologyManyStepShapes) {
  ASSERT_EQ(corpus_problem(), "");
  for (const auto& [name, path] : all_topologies()) {
    const NodeTopology& topo = load_cached(path);
    const std::size_t g = topo.gpus.size();
    std::vector<std::optional<std::vector<unsigned>>> allocations{std::nullopt};
    if (g > 0) {
      std::vector<unsigned> every_other, last_half;
      for (unsigned i = 0; i < g; i += 2) every_other.push_back(i);
      for (unsigned i = static_cast<unsigned>(g / 2); i < g; ++i) last_half.push_back(i);
      allocations.push_back(every_other);
      allocations.push_back(last_half);
      allocations.push_back(std::vector<unsigned>{});
    }
    const std::set<unsigned> pu_set = all_pus(topo);
    const std::vector<unsigned> pus(pu_set.begin(), pu_set.end());
    std::vector<std::optional<std::vector<unsigned>>> cpu_sets{std::nullopt};
    cpu_sets.push_back(std::vector<unsigned>(pus.begin(), pus.begin() + static_cast<long>((pus.size() + 1) / 2)));
    cpu_sets.push_back(std::vector<unsigned>{pus.front(), pus.back()});
    for (unsigned tasks : {1u, 2u, 3u, 4u, 5u, 8u, 16u}) {
      for (const auto& alloc : allocations) {
        for (const auto& cpus : cpu_sets) {
          StepFacts facts;
          facts.local_tasks = tasks;
          facts.node_id = 3;
          facts.gpus = alloc;
          facts.cpus = cpus;
          SCOPED_TRACE(name + " tasks=" + std::to_string(tasks) +
                       " gpus=" + (alloc ? format_number_list(*alloc) : "all") +
                       " cpus=" + (cpus ? format_number_list(*cpus) : "all"));
          check(topo, facts, PlanOptions{});
        }
      }
    }
    // Admin exclusions: every NIC but the last excluded, then only the first included.
    if (topo.nics.size() > 1) {
      PlanOptions excl;
      for (std::size_t i = 0; i + 1 < topo.nics.size(); ++i) excl.nic_exclude.push_back(topo.nics[i].name);
      PlanOptions incl;
      incl.nic_include.push_back(topo.nics.front().name);
      for (const PlanOptions& o : {excl, incl}) {
        StepFacts facts;
        facts.local_tasks = 4;
        SCOPED_TRACE(name + " with nic_include/nic_exclude");
        check(topo, facts, o);
      }
    }
  }
}

}  // namespace
}  // namespace riseml::placement::test
