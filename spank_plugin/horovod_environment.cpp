#include "horovod_environment.hpp"

#include <riseml/common/horovod_ranks.hpp>

#include <charconv>
#include <numeric>

namespace riseml::spank {
namespace {

constexpr const char* kNoCross = "HOROVOD_CROSS_RANK and HOROVOD_CROSS_SIZE not set: ";

// A whole decimal number at the start of `text`, which it then skips.
std::optional<std::uint32_t> take_number(std::string_view& text) {
  std::uint32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end == text.data()) return std::nullopt;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  return value;
}

std::string facts_text(const HorovodTaskFacts& f) {
  return "task " + std::to_string(f.global_id) + " of " + std::to_string(f.total_tasks) + ", local task " +
         std::to_string(f.local_id) + " of " + std::to_string(f.local_tasks) + ", node " + std::to_string(f.node_id) +
         " of " + std::to_string(f.nodes);
}

// Cross rank and size from every node's task count, or why they cannot be known.
std::optional<HorovodCross> cross_of(const HorovodTaskFacts& f, std::string& why) {
  if (f.nodes == 1) {
    if (f.local_tasks == f.total_tasks) return HorovodCross{0, 1};
    why = std::string(kNoCross) + "one node but " + std::to_string(f.local_tasks) + " of " +
          std::to_string(f.total_tasks) + " tasks on it";
    return std::nullopt;
  }
  if (f.distribution && f.distribution->find("arbitrary") != std::string::npos) {
    // Ranks may then lie on the nodes in any order: Horovod orders a cross communicator by
    // global rank, which the node order need not follow, and this node cannot see the others'.
    why = std::string(kNoCross) + "SLURM_DISTRIBUTION=" + *f.distribution +
          " places ranks on the nodes in any order, so their order among the nodes is unknown here";
    return std::nullopt;
  }
  if (!f.tasks_per_node) {
    why = std::string(kNoCross) + "SLURM_STEP_TASKS_PER_NODE is not in the step's environment, so the other " +
          "nodes' task counts are unknown";
    return std::nullopt;
  }
  const auto counts = parse_tasks_per_node(*f.tasks_per_node, f.nodes);
  const std::uint64_t sum = counts ? std::accumulate(counts->begin(), counts->end(), std::uint64_t{0}) : 0;
  if (!counts || counts->size() != f.nodes || sum != f.total_tasks || (*counts)[f.node_id] != f.local_tasks) {
    why = std::string(kNoCross) + "SLURM_STEP_TASKS_PER_NODE=" + *f.tasks_per_node + " does not match the step (" +
          facts_text(f) + ")";
    return std::nullopt;
  }
  const auto cross = horovod_cross(*counts, f.node_id, f.local_id);
  if (!cross) why = std::string(kNoCross) + "no task of local rank " + std::to_string(f.local_id) + " on node " +
                    std::to_string(f.node_id) + " by SLURM_STEP_TASKS_PER_NODE=" + *f.tasks_per_node;
  return cross;
}

}  // namespace

std::optional<std::vector<std::uint32_t>> parse_tasks_per_node(std::string_view text, std::uint32_t max_nodes) {
  std::vector<std::uint32_t> counts;
  while (true) {
    const auto count = take_number(text);
    if (!count) return std::nullopt;
    std::uint32_t repeat = 1;
    if (text.starts_with("(x")) {
      text.remove_prefix(2);
      const auto times = take_number(text);
      if (!times || *times == 0 || !text.starts_with(")")) return std::nullopt;
      text.remove_prefix(1);
      repeat = *times;
    }
    if (repeat > max_nodes - counts.size()) return std::nullopt;
    counts.insert(counts.end(), repeat, *count);
    if (text.empty()) return counts;
    if (!text.starts_with(",")) return std::nullopt;
    text.remove_prefix(1);
  }
}

HorovodEnvironment horovod_environment(const HorovodTaskFacts& f) {
  HorovodEnvironment out;
  if (f.heterogeneous_job) {
    out.not_set = "HOROVOD_* not set: in a heterogeneous job (SLURM_HET_SIZE) Slurm numbers the ranks across "
                  "the job's components, which this step cannot see";
    return out;
  }
  if (f.procid && *f.procid != std::to_string(f.global_id)) {
    out.not_set = "HOROVOD_* not set: SLURM_PROCID=" + *f.procid + " is not the task's id in the step (" +
                  std::to_string(f.global_id) + ")";
    return out;
  }
  if (f.total_tasks == 0 || f.nodes == 0 || f.local_tasks == 0 || f.local_tasks > f.total_tasks ||
      f.global_id >= f.total_tasks || f.local_id >= f.local_tasks || f.node_id >= f.nodes) {
    out.not_set = "HOROVOD_* not set: Slurm's task facts contradict each other (" + facts_text(f) + ")";
    return out;
  }
  const HorovodRanks ranks{f.global_id, f.total_tasks, f.local_id, f.local_tasks, cross_of(f, out.not_set)};
  out.env = horovod_variables(ranks);
  return out;
}

}  // namespace riseml::spank
