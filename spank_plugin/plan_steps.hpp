// The planner's steps and the state they share (planner.cpp runs them in order). Internal to
// spank_plugin: GPUs (plan_gpus.cpp), CPUs and memory (plan_cpus.cpp), NICs and the socket
// interface (plan_nics.cpp), the environment (plan_environment.cpp).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "planner.hpp"

namespace riseml::placement::detail {

// A CPU unit handed to one task: a whole core (its allowed PUs), or one PU when there are fewer
// cores than tasks.
struct Unit {
  std::vector<unsigned> pus;
  const TreePath* path = nullptr;
};

struct TaskState {
  std::vector<unsigned> gpus;            // indices into topology.gpus
  std::set<unsigned> local_pus;          // union of the GPUs' local PUs
  std::vector<const TreePath*> anchors;  // the GPUs' places in the tree
  std::vector<std::size_t> units;        // indices into Work::units
  std::vector<const Nic*> nics;
  std::string netif;                     // for NCCL_SOCKET_IFNAME / the socket fallback
};

struct Work {
  const NodeTopology& topo;
  const StepFacts& facts;
  const PlanOptions& options;
  std::vector<TaskPlan> plans;
  std::vector<TaskState> tasks;
  std::vector<unsigned> gpus;                    // the allocation, in locality order
  std::map<unsigned, std::string> slurm_names;   // GPU index -> what the step calls it
  std::vector<Unit> units;

  unsigned ntasks() const { return static_cast<unsigned>(plans.size()); }
  void warn_all(const std::string& w) {
    for (auto& p : plans) p.warnings.push_back(w);
  }
};

void assign_gpus(Work& w);
void assign_cpus_and_memory(Work& w);
void assign_nics(Work& w);
void set_environment(Work& w);

std::string join(const std::vector<std::string>& parts);

}  // namespace riseml::placement::detail
