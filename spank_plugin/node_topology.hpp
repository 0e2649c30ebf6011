// The node as the planner sees it: a plain description extracted from hwloc (hwloc_loader.cpp,
// run only in the riseml-topology helper process) and passed on as text (topology_text.hpp), so
// the planner is pure and its tests need no hwloc objects.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace riseml::placement {

// Where an object sits in the hwloc tree: the gp_index of every ancestor from the root down to
// the object itself. The length of the common prefix of two paths is the depth of their deepest
// common ancestor: the longer, the nearer.
using TreePath = std::vector<std::uint64_t>;
std::size_t common_depth(const TreePath& a, const TreePath& b);

enum class GpuVendor { nvidia, amd };

struct Core {
  std::vector<unsigned> pus;  // OS cpu numbers, in logical order
  TreePath path;              // ends with the core
  bool operator==(const Core&) const = default;
};

struct NumaNode {
  unsigned os_index = 0;
  std::vector<unsigned> pus;  // OS cpu numbers
  bool operator==(const NumaNode&) const = default;
};

struct Gpu {
  std::string pci_bus_id;  // 0000:07:00.0
  GpuVendor vendor = GpuVendor::nvidia;
  std::string uuid;        // GPU-... as CUDA / ROCm accept it; empty when unknown
  std::string os_name;     // cuda0, nvml0, rsmi0, or empty (PCI device only)
  std::vector<unsigned> local_pus;  // cpuset of the nearest non-I/O ancestor
  unsigned locality_order = 0;      // logical index of the first local PU (sort key)
  TreePath path;                    // ends with the PCI device
  bool operator==(const Gpu&) const = default;
};

struct Nic {  // an OpenFabrics device (mlx5_0, hfi1_0)
  std::string name;
  std::string pci_bus_id;
  std::vector<unsigned> active_ports;  // ports in state ACTIVE; empty: unknown
  std::vector<std::string> netdevs;    // network interfaces of the same PCI function (ib0)
  TreePath path;
  bool operator==(const Nic&) const = default;
};

struct NetInterface {  // a network OS device: eth0, ib0, ens1f0
  std::string name;
  bool ipoib = false;  // on the PCI function of an OpenFabrics device, or named ib*
  double link_speed = 0;  // of its PCI device, GB/s as hwloc reports it; 0: unknown
  TreePath path;
  bool operator==(const NetInterface&) const = default;
};

struct NodeTopology {
  std::string source;             // the XML file, or "this node"
  std::vector<Core> cores;        // logical order
  std::vector<NumaNode> numa_nodes;
  std::vector<Gpu> gpus;          // PCI bus id order: Slurm's GPU index i is gpus[i]
  std::vector<Nic> nics;          // name order
  std::vector<NetInterface> netifs;
  bool operator==(const NodeTopology&) const = default;
};

}  // namespace riseml::placement
