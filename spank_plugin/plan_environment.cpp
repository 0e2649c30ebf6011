// The environment of each task: GPU selection, NCCL/UCX network choice (or the socket fallback),
// OMP_NUM_THREADS, and RISEML_*.
#include <algorithm>

#include "plan_steps.hpp"

namespace riseml::placement::detail {
namespace {

std::string vendor_index(const NodeTopology& topo, unsigned gpu) {
  unsigned n = 0;
  for (unsigned i = 0; i < gpu; ++i) n += topo.gpus[i].vendor == topo.gpus[gpu].vendor ? 1 : 0;
  return std::to_string(n);
}

void gpu_variables(const Work& w, const TaskState& task, TaskPlan& p) {
  std::vector<std::string> nvidia, amd;
  for (unsigned g : task.gpus) {
    const Gpu& gpu = w.topo.gpus[g];
    std::string id;
    if (w.options.gpu_ids != GpuIds::index && !gpu.uuid.empty()) {
      id = gpu.uuid;
    } else {
      auto it = w.slurm_names.find(g);
      id = it != w.slurm_names.end() ? it->second : vendor_index(w.topo, g);
      if (w.options.gpu_ids == GpuIds::uuid) {
        p.warnings.push_back("GPU " + gpu.pci_bus_id + " has no UUID in the topology: using index " + id);
      }
    }
    (gpu.vendor == GpuVendor::amd ? amd : nvidia).push_back(id);
  }
  if (!nvidia.empty()) {
    p.env.emplace_back("CUDA_VISIBLE_DEVICES", join(nvidia));
    p.env.emplace_back("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
  }
  if (!amd.empty()) {
    p.env.emplace_back("ROCR_VISIBLE_DEVICES", join(amd));
    // HIP applies these on top of ROCR's selection: Slurm's values would pick the wrong GPU.
    if (nvidia.empty()) p.unset_env = {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"};
  }
}

}  // namespace

void set_environment(Work& w) {
  const EnvChoice& env = w.options.env;
  for (unsigned t = 0; t < w.ntasks(); ++t) {
    const TaskState& task = w.tasks[t];
    TaskPlan& p = w.plans[t];
    auto set = [&](const char* name, std::string value) { p.env.emplace_back(name, std::move(value)); };
    if (env.gpu && !task.gpus.empty()) gpu_variables(w, task, p);
    std::vector<std::string> hca;  // mlx5_0:1 (device:port), exact names for NCCL with '='
    for (const Nic* n : task.nics) {
      if (n->active_ports.empty()) {
        hca.push_back(n->name + ":1");
      } else {
        for (unsigned port : n->active_ports) hca.push_back(n->name + ":" + std::to_string(port));
      }
    }
    if (env.nccl) {
      if (!hca.empty()) {
        set("NCCL_IB_HCA", "=" + join(hca));
      } else {
        set("NCCL_IB_DISABLE", "1");
      }
      if (!task.netif.empty()) set("NCCL_SOCKET_IFNAME", "=" + task.netif);
    }
    if (env.ucx) {
      if (!hca.empty()) {
        set("UCX_NET_DEVICES", join(hca));
      } else if (!task.netif.empty()) {
        set("UCX_NET_DEVICES", task.netif);
      }
    }
    if (hca.empty()) {
      p.warnings.push_back(std::string("no InfiniBand/RoCE device") +
                           (w.topo.nics.empty() ? "" : " left after nic_include/nic_exclude") +
                           ": NCCL and UCX use sockets" + (task.netif.empty() ? "" : " over " + task.netif));
    }
    if (task.netif.empty()) p.warnings.push_back("no network interface in the topology: NCCL_SOCKET_IFNAME not set");
    if (env.omp) set("OMP_NUM_THREADS", std::to_string(std::max<std::size_t>(1, task.units.size())));
    if (env.riseml) {
      set("RISEML_LOCAL_RANK", std::to_string(t));
      set("RISEML_LOCAL_SIZE", std::to_string(w.ntasks()));
      set("RISEML_NODE_ID", std::to_string(w.facts.node_id));
      set("RISEML_PLAN", one_line(p));
    }
  }
}

}  // namespace riseml::placement::detail
