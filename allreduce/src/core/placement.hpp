// Where the ranks of a host may run, and what that means for waiting. Each rank publishes its
// CPU affinity at setup (the host facts); a rank spins while it waits on shared memory only
// when the ranks it shares CPUs with have a CPU each. Bound one core per rank (mpirun's
// default, srun with our plugin, taskset) or unbound with no more ranks than CPUs: spin.
// More ranks than the CPUs they can run on: a spinning rank keeps the peer it waits for off
// the CPU, so it yields at once instead.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace riseml {

// The CPUs this process may run on (sched_getaffinity), ascending; empty if unknown.
std::vector<int> this_process_cpus();

// "0-3,8,10-11"; "" for an empty list.
std::string format_cpu_list(const std::vector<int>& cpus);
// The inverse, ascending and without repeats; nullopt for anything but such a list (a peer's
// bytes are never trusted: no number above 1 << 20, at most 1 << 16 entries).
std::optional<std::vector<int>> parse_cpu_list(std::string_view text);

struct SpinDecision {
  bool spin = false;
  int sharing_ranks = 0;  // the ranks of this host that share CPUs with this one, itself included
  int cpus = 0;           // the CPUs they may run on together
};

// `masks`: the CPU lists of the host's ranks (an empty one: unknown, taken to share every CPU
// of the others); `me`: this rank's index among them. The ranks that share CPUs with this one
// are those linked to it by overlapping masks, directly or through others; it spins when they
// are no more than the union of their masks.
SpinDecision decide_spin(const std::vector<std::vector<int>>& masks, int me);

// spin_time unset: 50 us when decide_spin says spin, else none.
std::chrono::microseconds automatic_spin_time(const SpinDecision& decision);

}  // namespace riseml
