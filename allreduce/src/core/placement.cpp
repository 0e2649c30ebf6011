#include "placement.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <set>

namespace riseml {

std::vector<int> this_process_cpus() {
  // Hosts with more CPUs than a cpu_set_t holds: grow the set until the kernel takes it.
  for (int n = 1024; n <= (1 << 20); n *= 2) {
    cpu_set_t* set = CPU_ALLOC(n);
    if (set == nullptr) return {};
    const std::size_t bytes = CPU_ALLOC_SIZE(n);
    CPU_ZERO_S(bytes, set);
    if (::sched_getaffinity(0, bytes, set) == 0) {
      std::vector<int> cpus;
      for (int c = 0; c < n; ++c)
        if (CPU_ISSET_S(c, bytes, set)) cpus.push_back(c);
      CPU_FREE(set);
      return cpus;
    }
    CPU_FREE(set);
    if (errno != EINVAL) return {};
  }
  return {};
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string s;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(cpus[i]);
    if (j > i) s += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return s;
}

std::optional<std::vector<int>> parse_cpu_list(std::string_view text) {
  constexpr int kLargestCpu = 1 << 20;
  constexpr std::size_t kMostCpus = 1 << 16;
  std::set<int> cpus;
  auto number = [&](std::string_view& t, int& out) {
    const auto r = std::from_chars(t.data(), t.data() + t.size(), out);
    if (r.ec != std::errc() || r.ptr == t.data() || out < 0 || out > kLargestCpu) return false;
    t.remove_prefix(static_cast<std::size_t>(r.ptr - t.data()));
    return true;
  };
  std::string_view t = text;
  while (!t.empty()) {
    int lo = 0, hi = 0;
    if (!number(t, lo)) return std::nullopt;
    hi = lo;
    if (!t.empty() && t.front() == '-') {
      t.remove_prefix(1);
      if (!number(t, hi) || hi < lo) return std::nullopt;
    }
    if (static_cast<std::size_t>(hi - lo) >= kMostCpus) return std::nullopt;
    for (int c = lo; c <= hi; ++c) cpus.insert(c);
    if (cpus.size() > kMostCpus) return std::nullopt;
    if (t.empty()) break;
    if (t.front() != ',') return std::nullopt;
    t.remove_prefix(1);
    if (t.empty()) return std::nullopt;
  }
  return std::vector<int>(cpus.begin(), cpus.end());
}

namespace {
bool overlap(const std::vector<int>& a, const std::vector<int>& b) {
  if (a.empty() || b.empty()) return true;  // unknown: assume the worst
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) return true;
    a[i] < b[j] ? ++i : ++j;
  }
  return false;
}
}  // namespace

SpinDecision decide_spin(const std::vector<std::vector<int>>& masks, int me) {
  SpinDecision d;
  const int n = static_cast<int>(masks.size());
  if (me < 0 || me >= n) return d;
  // The ranks linked to `me` by overlapping masks (a breadth-first walk; hosts have few ranks).
  std::vector<char> in(static_cast<std::size_t>(n), 0);
  std::vector<int> todo{me};
  in[static_cast<std::size_t>(me)] = 1;
  std::set<int> cpus;
  while (!todo.empty()) {
    const int r = todo.back();
    todo.pop_back();
    ++d.sharing_ranks;
    const auto& m = masks[static_cast<std::size_t>(r)];
    cpus.insert(m.begin(), m.end());
    for (int o = 0; o < n; ++o)
      if (!in[static_cast<std::size_t>(o)] && overlap(m, masks[static_cast<std::size_t>(o)])) {
        in[static_cast<std::size_t>(o)] = 1;
        todo.push_back(o);
      }
  }
  d.cpus = static_cast<int>(cpus.size());
  d.spin = d.sharing_ranks <= d.cpus;
  return d;
}

std::chrono::microseconds automatic_spin_time(const SpinDecision& decision) {
  return std::chrono::microseconds(decision.spin ? 50 : 0);
}

}  // namespace riseml
