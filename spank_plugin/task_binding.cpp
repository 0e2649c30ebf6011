#include "task_binding.hpp"

#include <linux/mempolicy.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace riseml::spank {
namespace {

constexpr unsigned max_cpus = 8192;
constexpr unsigned max_nodes = 1024;
constexpr unsigned bits = 8 * sizeof(unsigned long);

}  // namespace

std::optional<std::vector<unsigned>> current_cpus() {
  cpu_set_t* set = CPU_ALLOC(max_cpus);
  if (set == nullptr) return std::nullopt;
  const std::size_t size = CPU_ALLOC_SIZE(max_cpus);
  std::optional<std::vector<unsigned>> out;
  if (sched_getaffinity(0, size, set) == 0) {
    out.emplace();
    for (unsigned c = 0; c < max_cpus; ++c) {
      if (CPU_ISSET_S(c, size, set)) out->push_back(c);
    }
  }
  CPU_FREE(set);
  return out;
}

std::string bind_cpus(const std::vector<unsigned>& cpus) {
  cpu_set_t* set = CPU_ALLOC(max_cpus);
  if (set == nullptr) return "out of memory";
  const std::size_t size = CPU_ALLOC_SIZE(max_cpus);
  CPU_ZERO_S(size, set);
  for (unsigned c : cpus) {
    if (c < max_cpus) CPU_SET_S(c, size, set);
  }
  std::string error;
  if (sched_setaffinity(0, size, set) != 0) {
    error = std::string("sched_setaffinity: ") + std::strerror(errno);
  }
  CPU_FREE(set);
  return error;
}

std::string bind_memory(const std::vector<unsigned>& numa_nodes, MemBind how) {
  if (how == MemBind::none || numa_nodes.empty()) return {};
  unsigned long mask[max_nodes / bits] = {};
  unsigned highest = 0;
  for (unsigned n : numa_nodes) {
    if (n >= max_nodes) return "NUMA node " + std::to_string(n) + " out of range";
    if (how == MemBind::prefer && n != numa_nodes.front()) continue;  // MPOL_PREFERRED: one node
    mask[n / bits] |= 1UL << (n % bits);
    highest = n > highest ? n : highest;
  }
  const int mode = how == MemBind::bind ? MPOL_BIND : MPOL_PREFERRED;
  if (syscall(SYS_set_mempolicy, mode, mask, static_cast<unsigned long>(highest + 2)) != 0) {
    return std::string("set_mempolicy: ") + std::strerror(errno);
  }
  return {};
}

}  // namespace riseml::spank
