// CPUs: disjoint sets per task out of the step's CPUs, whole cores first, each task's taken from
// the cores nearest its GPUs; memory on the GPU's NUMA node.
#include <algorithm>

#include "cpu_list.hpp"
#include "plan_steps.hpp"

namespace riseml::placement::detail {
namespace {

std::set<unsigned> step_cpus(const NodeTopology& topo, const StepFacts& facts) {
  std::set<unsigned> known;
  for (const Core& c : topo.cores) known.insert(c.pus.begin(), c.pus.end());
  if (!facts.cpus) return known;
  std::set<unsigned> allowed;
  for (unsigned c : *facts.cpus) {
    if (known.count(c) != 0) allowed.insert(c);
  }
  if (allowed.empty()) {
    throw PlanError("none of the step's CPUs (" + format_number_list(*facts.cpus) + ") is in the topology (" +
                    topo.source + ", CPUs " + format_number_list({known.begin(), known.end()}) +
                    "): point topology= at this node's own export");
  }
  return allowed;
}

std::size_t nearness(const Unit& unit, const TaskState& task) {
  std::size_t best = 0;
  for (const TreePath* a : task.anchors) best = std::max(best, common_depth(*unit.path, *a));
  return best;
}

// Tasks with GPUs: first each takes its part of the CPUs local to its GPUs (tasks whose GPUs
// share a locality split those evenly), then the rest of its share from the nearest free CPUs
// (deepest common ancestor with the GPU).
void near_the_gpus(Work& w, const std::vector<std::size_t>& share) {
  const std::size_t nunits = w.units.size();
  std::vector<bool> taken(nunits, false);
  auto is_local = [&](std::size_t u, unsigned t) {
    return std::all_of(w.units[u].pus.begin(), w.units[u].pus.end(),
                       [&](unsigned pu) { return w.tasks[t].local_pus.count(pu) != 0; });
  };
  std::map<std::set<unsigned>, std::vector<unsigned>> domains;  // local CPUs -> tasks
  for (unsigned t = 0; t < w.ntasks(); ++t) domains[w.tasks[t].local_pus].push_back(t);
  for (const auto& [local_pus, members] : domains) {
    std::size_t capacity = 0;
    for (std::size_t u = 0; u < nunits; ++u) capacity += is_local(u, members.front()) ? 1 : 0;
    for (std::size_t k = 0; k < members.size(); ++k) {
      const unsigned t = members[k];
      const std::size_t cap =
          std::min(share[t], capacity / members.size() + (k < capacity % members.size() ? 1 : 0));
      for (std::size_t u = 0; u < nunits && w.tasks[t].units.size() < cap; ++u) {
        if (taken[u] || !is_local(u, t)) continue;
        taken[u] = true;
        w.tasks[t].units.push_back(u);
      }
    }
  }
  for (unsigned t = 0; t < w.ntasks(); ++t) {
    while (w.tasks[t].units.size() < share[t]) {
      std::size_t best = nunits;
      std::size_t best_near = 0;
      for (std::size_t u = 0; u < nunits; ++u) {
        if (taken[u]) continue;
        const std::size_t n = nearness(w.units[u], w.tasks[t]);
        if (best == nunits || n > best_near) {
          best = u;
          best_near = n;
        }
      }
      if (best == nunits) break;
      taken[best] = true;
      w.tasks[t].units.push_back(best);
    }
  }
}

// Memory: the NUMA node(s) of the task's GPUs where the task runs on them, else the NUMA
// node(s) of its CPUs.
std::vector<unsigned> memory_nodes(const NodeTopology& topo, const TaskPlan& plan, const TaskState& task) {
  std::vector<unsigned> cpu_nodes, gpu_nodes;
  for (const NumaNode& n : topo.numa_nodes) {
    const bool hit = std::any_of(plan.cpus.begin(), plan.cpus.end(), [&](unsigned c) {
      return std::find(n.pus.begin(), n.pus.end(), c) != n.pus.end();
    });
    const bool near_gpu =
        std::any_of(n.pus.begin(), n.pus.end(), [&](unsigned c) { return task.local_pus.count(c) != 0; });
    if (hit) cpu_nodes.push_back(n.os_index);
    if (hit && near_gpu) gpu_nodes.push_back(n.os_index);
  }
  std::vector<unsigned> mems = gpu_nodes.empty() ? cpu_nodes : gpu_nodes;
  std::sort(mems.begin(), mems.end());
  return mems;
}

}  // namespace

void assign_cpus_and_memory(Work& w) {
  const unsigned ntasks = w.ntasks();
  const std::set<unsigned> allowed = step_cpus(w.topo, w.facts);
  // Units: whole cores when there is at least one per task, else single PUs.
  std::vector<Unit> cores, pus;
  for (const Core& c : w.topo.cores) {
    Unit core{{}, &c.path};
    for (unsigned pu : c.pus) {
      if (allowed.count(pu) == 0) continue;
      core.pus.push_back(pu);
      pus.push_back(Unit{{pu}, &c.path});
    }
    if (!core.pus.empty()) cores.push_back(std::move(core));
  }
  w.units = cores.size() >= ntasks ? std::move(cores) : std::move(pus);
  const std::size_t nunits = w.units.size();
  std::vector<std::size_t> share(ntasks);
  for (unsigned t = 0; t < ntasks; ++t) share[t] = nunits / ntasks + (t < nunits % ntasks ? 1 : 0);
  const bool any_gpu = std::any_of(w.tasks.begin(), w.tasks.end(), [](const TaskState& t) { return !t.gpus.empty(); });
  if (nunits < ntasks) {
    for (unsigned t = 0; t < ntasks; ++t) w.tasks[t].units.push_back(t * nunits / ntasks);
    w.warn_all(std::to_string(ntasks) + " tasks share " + std::to_string(nunits) +
               " CPU(s): ask for at least one CPU per task (--cpus-per-task)");
  } else if (!any_gpu) {
    std::size_t next = 0;  // contiguous blocks in logical order: neighbouring ranks share a socket
    for (unsigned t = 0; t < ntasks; ++t) {
      for (std::size_t k = 0; k < share[t]; ++k) w.tasks[t].units.push_back(next++);
    }
  } else {
    near_the_gpus(w, share);
  }
  for (unsigned t = 0; t < ntasks; ++t) {
    TaskState& task = w.tasks[t];
    TaskPlan& plan = w.plans[t];
    std::sort(task.units.begin(), task.units.end());
    for (std::size_t u : task.units) plan.cpus.insert(plan.cpus.end(), w.units[u].pus.begin(), w.units[u].pus.end());
    std::sort(plan.cpus.begin(), plan.cpus.end());
    if (!task.local_pus.empty()) {
      const bool near =
          std::any_of(plan.cpus.begin(), plan.cpus.end(), [&](unsigned c) { return task.local_pus.count(c) != 0; });
      if (!near) {
        plan.warnings.push_back("no CPU of the step is local to GPU " + plan.gpus.front() + " (its CPUs: " +
                                format_number_list({task.local_pus.begin(), task.local_pus.end()}) +
                                "); using the nearest free ones");
      }
    }
    plan.mems = memory_nodes(w.topo, plan, task);
  }
}

}  // namespace riseml::placement::detail
