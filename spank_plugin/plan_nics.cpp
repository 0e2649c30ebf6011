// NICs: per GPU the OpenFabrics devices with the deepest common ancestor, GPUs (or CPU-only
// tasks) with the same candidates taking them in turn; admin exclusions first. The socket
// interface: the chosen NIC's IPoIB interface, else the nearest fast one.
#include <algorithm>

#include "plan_steps.hpp"

namespace riseml::placement::detail {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

std::string socket_interface(const NodeTopology& topo, const TaskState& task, const TreePath* anchor) {
  for (const Nic* n : task.nics) {
    for (const auto& dev : n->netdevs) {
      const bool known = std::any_of(topo.netifs.begin(), topo.netifs.end(),
                                     [&](const NetInterface& i) { return i.name == dev; });
      if (known) return dev;
    }
  }
  // Slow management ports (a 1 GbE next to a 200 Gb/s one) only when nothing faster is there;
  // IPoIB first at the same distance.
  double fastest = 0;
  for (const NetInterface& i : topo.netifs) fastest = std::max(fastest, i.link_speed);
  const NetInterface* best = nullptr;
  std::size_t best_d = 0;
  for (const NetInterface& i : topo.netifs) {
    if (i.link_speed < fastest / 2) continue;
    const std::size_t d = anchor != nullptr ? common_depth(*anchor, i.path) : 0;
    if (best == nullptr || d > best_d || (d == best_d && i.ipoib && !best->ipoib)) {
      best = &i;
      best_d = d;
    }
  }
  return best != nullptr ? best->name : std::string();
}

}  // namespace

void assign_nics(Work& w) {
  const NodeTopology& topo = w.topo;
  std::vector<const Nic*> nics;
  for (const Nic& n : topo.nics) {
    if (!w.options.nic_include.empty() && !contains(w.options.nic_include, n.name)) continue;
    if (contains(w.options.nic_exclude, n.name)) continue;
    nics.push_back(&n);
  }
  for (const auto& name : w.options.nic_include) {
    const bool found = std::any_of(topo.nics.begin(), topo.nics.end(), [&](const Nic& n) { return n.name == name; });
    if (!found) w.warn_all("nic_include names " + name + ", which this node does not have");
  }
  std::map<std::vector<const Nic*>, std::size_t> turns;
  auto pick = [&](const TreePath& anchor) -> const Nic* {
    std::size_t best = 0;
    std::vector<const Nic*> candidates;
    for (const Nic* n : nics) {
      const std::size_t d = common_depth(anchor, n->path);
      if (candidates.empty() || d > best) {
        best = d;
        candidates.assign(1, n);
      } else if (d == best) {
        candidates.push_back(n);
      }
    }
    if (candidates.empty()) return nullptr;
    return candidates[turns[candidates]++ % candidates.size()];
  };
  std::map<unsigned, const Nic*> gpu_nic;
  for (unsigned g : w.gpus) {
    if (const Nic* n = pick(topo.gpus[g].path); n != nullptr) gpu_nic[g] = n;
  }
  for (unsigned t = 0; t < w.ntasks(); ++t) {
    TaskState& task = w.tasks[t];
    const TreePath* anchor = nullptr;
    if (!task.gpus.empty()) {
      anchor = task.anchors.front();
      for (unsigned g : task.gpus) {
        auto it = gpu_nic.find(g);
        if (it != gpu_nic.end() && std::find(task.nics.begin(), task.nics.end(), it->second) == task.nics.end()) {
          task.nics.push_back(it->second);
        }
      }
    } else if (!task.units.empty()) {
      anchor = w.units[task.units.front()].path;
      if (const Nic* n = pick(*anchor); n != nullptr) task.nics.push_back(n);
    }
    for (const Nic* n : task.nics) w.plans[t].nics.push_back(n->name);
    task.netif = socket_interface(topo, task, anchor);
  }
}

}  // namespace riseml::placement::detail
