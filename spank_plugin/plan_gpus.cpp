// GPUs: the allocation in locality order (NUMA/package first, then PCI), so neighbouring local
// ranks sit on the same socket; one per task, contiguous groups, or shared.
#include <algorithm>

#include "plan_steps.hpp"

namespace riseml::placement::detail {
namespace {

std::vector<unsigned> allocated_gpus(const NodeTopology& topo, const StepFacts& facts,
                                     std::map<unsigned, std::string>& names) {
  std::vector<unsigned> gpus;
  if (!facts.gpus) {
    for (unsigned i = 0; i < topo.gpus.size(); ++i) gpus.push_back(i);
    return gpus;
  }
  const auto& alloc = *facts.gpus;
  for (std::size_t k = 0; k < alloc.size(); ++k) {
    const unsigned i = alloc[k];
    if (i >= topo.gpus.size()) {
      throw PlanError("the step was given GPU " + std::to_string(i) + " but the topology (" + topo.source +
                      ") has " + std::to_string(topo.gpus.size()) +
                      " GPU(s): point topology= at this node's own export (lstopo --of xml), or check "
                      "that gres.conf lists the GPUs in PCI order");
    }
    if (std::find(gpus.begin(), gpus.end(), i) != gpus.end()) continue;
    gpus.push_back(i);
    if (facts.gpu_names.size() == alloc.size() && !facts.gpu_names[k].empty()) names[i] = facts.gpu_names[k];
  }
  return gpus;
}

}  // namespace

void assign_gpus(Work& w) {
  const NodeTopology& topo = w.topo;
  const unsigned ntasks = w.ntasks();
  w.gpus = allocated_gpus(topo, w.facts, w.slurm_names);
  std::stable_sort(w.gpus.begin(), w.gpus.end(), [&](unsigned a, unsigned b) {
    return topo.gpus[a].locality_order < topo.gpus[b].locality_order;
  });
  const std::size_t ngpus = w.gpus.size();
  if (ngpus > 0) {
    for (unsigned t = 0; t < ntasks; ++t) {
      if (ntasks <= ngpus) {
        for (std::size_t k = t * ngpus / ntasks; k < (t + 1) * ngpus / ntasks; ++k) w.tasks[t].gpus.push_back(w.gpus[k]);
      } else {
        w.tasks[t].gpus.push_back(w.gpus[t * ngpus / ntasks]);
      }
    }
    if (ntasks > ngpus) {
      w.warn_all(std::to_string(ntasks) + " tasks share " + std::to_string(ngpus) +
                 " GPU(s): start one task per GPU (srun --gpus-per-task=1 or -n " + std::to_string(ngpus) + ")");
    } else if (ntasks < ngpus && ngpus % ntasks != 0) {
      w.warn_all(std::to_string(ngpus) + " GPUs do not split evenly over " + std::to_string(ntasks) + " tasks");
    }
  } else if (!topo.gpus.empty() && w.facts.gpus) {
    w.warn_all("the step has no GPU on this node (no --gpus/--gres): GPU variables left as they are");
  }
  for (unsigned t = 0; t < ntasks; ++t) {
    for (unsigned g : w.tasks[t].gpus) {
      w.tasks[t].local_pus.insert(topo.gpus[g].local_pus.begin(), topo.gpus[g].local_pus.end());
      w.tasks[t].anchors.push_back(&topo.gpus[g].path);
      w.plans[t].gpu_indices.push_back(g);
      w.plans[t].gpus.push_back(topo.gpus[g].pci_bus_id);
    }
  }
}

}  // namespace riseml::placement::detail
