#include "hwloc_loader.hpp"

#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>

#if defined(__SANITIZE_ADDRESS__)
#define RISEML_LEAK_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RISEML_LEAK_CHECKED 1
#endif
#endif
#ifdef RISEML_LEAK_CHECKED
#include <sanitizer/lsan_interface.h>
#endif

namespace riseml::placement {
namespace {

// hwloc's PCI discovery of the live node (libpciaccess, in a plugin hwloc unloads again) leaks
// about 1 KB per load: not ours, and riseml-topology exits right after. In a LeakSanitizer build
// that would fail every test reading this node, so allocations during the load are not counted.
int load_without_counting_leaks(hwloc_topology_t topo) {
#ifdef RISEML_LEAK_CHECKED
  __lsan_disable();
  const int rc = hwloc_topology_load(topo);
  const int saved = errno;
  __lsan_enable();
  errno = saved;
  return rc;
#else
  return hwloc_topology_load(topo);
#endif
}

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

constexpr unsigned vendor_nvidia = 0x10de;
constexpr unsigned vendor_amd = 0x1002;
constexpr unsigned vendor_amazon = 0x1d0f;

TreePath path_of(hwloc_obj_t obj) {
  TreePath path;
  for (hwloc_obj_t o = obj; o != nullptr; o = o->parent) path.push_back(o->gp_index);
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<unsigned> pus_of(hwloc_topology_t topo, hwloc_const_cpuset_t set) {
  std::vector<unsigned> pus;
  if (set == nullptr) return pus;
  // Logical order, which is the tree order.
  for (hwloc_obj_t pu = hwloc_get_next_obj_covering_cpuset_by_type(topo, set, HWLOC_OBJ_PU, nullptr);
       pu != nullptr; pu = hwloc_get_next_obj_covering_cpuset_by_type(topo, set, HWLOC_OBJ_PU, pu)) {
    pus.push_back(pu->os_index);
  }
  return pus;
}

std::string bus_id(hwloc_obj_t pci) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain & 0xffffu,
                pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
  return buf;
}

// An OS device's type as a plain number. hwloc keeps whatever number the XML says
// (osdev_type="8"), and reading a number outside the enum as the enum is undefined behaviour.
unsigned osdev_type(hwloc_obj_t os) {
  static_assert(sizeof(os->attr->osdev.type) == sizeof(unsigned));
  unsigned type = 0;
  std::memcpy(&type, &os->attr->osdev.type, sizeof type);
  return type;
}

bool is_osdev(hwloc_obj_t os, hwloc_obj_osdev_type_t type) { return osdev_type(os) == static_cast<unsigned>(type); }

bool starts_with(const char* s, const char* prefix) {
  return s != nullptr && std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}

template <typename F>
void for_each_osdev(hwloc_obj_t pci, F f) {
  for (hwloc_obj_t c = pci->io_first_child; c != nullptr; c = c->next_sibling) {
    // A device without a name cannot be named in NCCL_IB_HCA or NCCL_SOCKET_IFNAME.
    if (c->type == HWLOC_OBJ_OS_DEVICE && c->name != nullptr && c->name[0] != '\0') f(c);
  }
}

bool is_gpu_osdev(hwloc_obj_t os) {
  return starts_with(os->name, "cuda") || starts_with(os->name, "nvml") || starts_with(os->name, "rsmi");
}

void add_gpus_and_nics(hwloc_topology_t topo, NodeTopology& out) {
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci != nullptr;
       pci = hwloc_get_next_pcidev(topo, pci)) {
    const unsigned cls = pci->attr->pcidev.class_id;
    const unsigned vendor = pci->attr->pcidev.vendor_id;
    bool gpu_osdev = false;
    bool rsmi = false;
    bool fabric = false;
    for_each_osdev(pci, [&](hwloc_obj_t os) {
      if (is_gpu_osdev(os)) gpu_osdev = true;
      if (starts_with(os->name, "rsmi")) rsmi = true;
      if (is_osdev(os, HWLOC_OBJ_OSDEV_OPENFABRICS)) fabric = true;
    });
    const bool gpu_vendor = vendor == vendor_nvidia || vendor == vendor_amd;
    const bool gpu_class = cls == 0x0302 || cls == 0x0300 || (cls == 0x0380 && vendor == vendor_amd);
    if (gpu_osdev || (gpu_class && gpu_vendor)) {
      Gpu gpu;
      gpu.pci_bus_id = bus_id(pci);
      gpu.vendor = (vendor == vendor_amd || rsmi) ? GpuVendor::amd : GpuVendor::nvidia;
      std::string cuda_name, other_name;
      for_each_osdev(pci, [&](hwloc_obj_t os) {
        if (const char* u = hwloc_obj_get_info_by_name(os, "NVIDIAUUID"); u != nullptr && gpu.uuid.empty()) {
          gpu.uuid = u;
        }
        if (const char* u = hwloc_obj_get_info_by_name(os, "AMDUUID"); u != nullptr && gpu.uuid.empty()) {
          gpu.uuid = std::string("GPU-") + u;
        }
        if (starts_with(os->name, "cuda") && cuda_name.empty()) cuda_name = os->name;
        if (is_gpu_osdev(os) && other_name.empty()) other_name = os->name;
      });
      gpu.os_name = !cuda_name.empty() ? cuda_name : other_name;
      hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(topo, pci);
      gpu.local_pus = pus_of(topo, anchor != nullptr ? anchor->cpuset : nullptr);
      if (!gpu.local_pus.empty()) {
        if (hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(topo, gpu.local_pus.front()); pu != nullptr) {
          gpu.locality_order = pu->logical_index;
        }
      }
      gpu.path = path_of(pci);
      out.gpus.push_back(std::move(gpu));
    }
    // AWS EFA (vendor 0x1d0f) shows as an OpenFabrics device but NCCL's InfiniBand transport
    // cannot use it (it needs the aws-ofi-nccl plugin): not a NIC for NCCL_IB_HCA.
    if (fabric && vendor != vendor_amazon) {
      for_each_osdev(pci, [&](hwloc_obj_t os) {
        if (!is_osdev(os, HWLOC_OBJ_OSDEV_OPENFABRICS)) return;
        Nic nic;
        nic.name = os->name;
        nic.pci_bus_id = bus_id(pci);
        for (unsigned port = 1; port <= 8; ++port) {
          char key[32];
          std::snprintf(key, sizeof key, "Port%uState", port);
          if (const char* state = hwloc_obj_get_info_by_name(os, key); state != nullptr) {
            if (std::strcmp(state, "4") == 0) nic.active_ports.push_back(port);
          }
        }
        for_each_osdev(pci, [&](hwloc_obj_t net) {
          if (is_osdev(net, HWLOC_OBJ_OSDEV_NETWORK)) nic.netdevs.emplace_back(net->name);
        });
        nic.path = path_of(pci);
        out.nics.push_back(std::move(nic));
      });
    }
  }
  std::sort(out.gpus.begin(), out.gpus.end(),
            [](const Gpu& a, const Gpu& b) { return a.pci_bus_id < b.pci_bus_id; });
  std::sort(out.nics.begin(), out.nics.end(),
            [](const Nic& a, const Nic& b) { return natural_less(a.name, b.name); });
}

bool virtual_interface(const char* name) {
  return std::strcmp(name, "lo") == 0 || starts_with(name, "docker") || starts_with(name, "veth") ||
         starts_with(name, "virbr") || starts_with(name, "br-") || starts_with(name, "cni") ||
         starts_with(name, "flannel");
}

void add_netifs(hwloc_topology_t topo, NodeTopology& out) {
  for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os != nullptr; os = hwloc_get_next_osdev(topo, os)) {
    if (!is_osdev(os, HWLOC_OBJ_OSDEV_NETWORK) || os->name == nullptr || os->name[0] == '\0') continue;
    if (virtual_interface(os->name)) continue;
    NetInterface netif;
    netif.name = os->name;
    netif.ipoib = starts_with(os->name, "ib");
    hwloc_obj_t parent = os->parent;
    if (parent != nullptr && parent->type == HWLOC_OBJ_PCI_DEVICE) {
      for_each_osdev(parent, [&](hwloc_obj_t sib) {
        if (is_osdev(sib, HWLOC_OBJ_OSDEV_OPENFABRICS)) netif.ipoib = true;
      });
      // An XML may say anything here (nan, -1): only a positive number is a speed.
      const float speed = parent->attr->pcidev.linkspeed;
      netif.link_speed = std::isfinite(speed) && speed > 0 ? speed : 0;
    }
    netif.path = path_of(parent != nullptr ? parent : os);
    out.netifs.push_back(std::move(netif));
  }
  std::sort(out.netifs.begin(), out.netifs.end(),
            [](const NetInterface& a, const NetInterface& b) { return natural_less(a.name, b.name); });
}

void add_cpus(hwloc_topology_t topo, NodeTopology& out) {
  const int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  const hwloc_obj_type_t unit = ncores > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  const int n = hwloc_get_nbobjs_by_type(topo, unit);
  for (int i = 0; i < n; ++i) {
    hwloc_obj_t obj = hwloc_get_obj_by_type(topo, unit, static_cast<unsigned>(i));
    Core core;
    core.pus = pus_of(topo, obj->cpuset);
    core.path = path_of(obj);
    if (!core.pus.empty()) out.cores.push_back(std::move(core));
  }
  const int nnuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nnuma; ++i) {
    hwloc_obj_t obj = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    out.numa_nodes.push_back(NumaNode{obj->os_index, pus_of(topo, obj->cpuset)});
  }
}

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = a[i] >= '0' && a[i] <= '9';
    const bool db = b[j] >= '0' && b[j] <= '9';
    if (da && db) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && a[ie] >= '0' && a[ie] <= '9') ++ie;
      while (je < b.size() && b[je] >= '0' && b[je] <= '9') ++je;
      const std::string na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      const std::size_t za = na.find_first_not_of('0'), zb = nb.find_first_not_of('0');
      const std::string ta = za == std::string::npos ? "" : na.substr(za);
      const std::string tb = zb == std::string::npos ? "" : nb.substr(zb);
      if (ta.size() != tb.size()) return ta.size() < tb.size();
      if (ta != tb) return ta < tb;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

bool load_topology(const std::string& xml_path, NodeTopology& out, std::string& error) noexcept {
  try {
    hwloc_topology_t raw = nullptr;
    if (hwloc_topology_init(&raw) != 0) {
      error = "hwloc_topology_init failed";
      return false;
    }
    TopologyPtr topo(raw);
    hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    // The whole node, not only what this process may use: the step's CPUs come separately.
    hwloc_topology_set_flags(raw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    if (!xml_path.empty()) {
      if (std::FILE* f = std::fopen(xml_path.c_str(), "r"); f != nullptr) {
        std::fclose(f);
      } else {
        error = "cannot read topology file " + xml_path + ": " + std::strerror(errno);
        return false;
      }
      if (hwloc_topology_set_xml(raw, xml_path.c_str()) != 0) {
        error = "hwloc cannot use " + xml_path + " as an XML topology";
        return false;
      }
    }
    if (load_without_counting_leaks(raw) != 0) {
      error = xml_path.empty() ? std::string("hwloc could not read this node's topology: ") + std::strerror(errno)
                               : "hwloc could not load " + xml_path + " (not an hwloc XML export?)";
      return false;
    }
    NodeTopology topology;
    topology.source = xml_path.empty() ? "this node" : xml_path;
    add_cpus(raw, topology);
    add_gpus_and_nics(raw, topology);
    add_netifs(raw, topology);
    if (topology.cores.empty()) {
      error = "the topology " + topology.source + " has no CPUs";
      return false;
    }
    out = std::move(topology);
    return true;
  } catch (const std::exception& e) {
    error = std::string("reading the topology failed: ") + e.what();
  } catch (...) {
    error = "reading the topology failed";
  }
  return false;
}

}  // namespace riseml::placement
