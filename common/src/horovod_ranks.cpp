#include <riseml/common/horovod_ranks.hpp>

namespace riseml {

std::optional<HorovodCross> horovod_cross(std::span<const std::uint32_t> tasks_per_node,
                                          std::uint32_t node, std::uint32_t local_rank) {
  if (node >= tasks_per_node.size() || tasks_per_node[node] <= local_rank) return std::nullopt;
  HorovodCross cross{0, 0};
  for (std::size_t n = 0; n < tasks_per_node.size(); ++n) {
    if (tasks_per_node[n] <= local_rank) continue;  // no process with this local rank there
    if (n < node) ++cross.rank;
    ++cross.size;
  }
  return cross;
}

std::optional<std::vector<std::uint32_t>> tasks_per_node(std::span<const int> node_of_rank, int nodes) {
  if (nodes < 1) return std::nullopt;
  std::vector<std::uint32_t> counts(static_cast<std::size_t>(nodes), 0);
  for (int node : node_of_rank) {
    if (node < 0 || node >= nodes) return std::nullopt;
    ++counts[static_cast<std::size_t>(node)];
  }
  return counts;
}

const std::vector<std::string>& horovod_variable_names() {
  static const std::vector<std::string> names{"HOROVOD_RANK",       "HOROVOD_SIZE",
                                              "HOROVOD_LOCAL_RANK", "HOROVOD_LOCAL_SIZE",
                                              "HOROVOD_CROSS_RANK", "HOROVOD_CROSS_SIZE"};
  return names;
}

std::vector<std::pair<std::string, std::string>> horovod_variables(const HorovodRanks& r) {
  const auto& names = horovod_variable_names();
  std::vector<std::uint32_t> values{r.rank, r.size, r.local_rank, r.local_size};
  if (r.cross) {
    values.push_back(r.cross->rank);
    values.push_back(r.cross->size);
  }
  std::vector<std::pair<std::string, std::string>> variables;
  for (std::size_t i = 0; i < values.size(); ++i) variables.emplace_back(names[i], std::to_string(values[i]));
  return variables;
}

}  // namespace riseml
