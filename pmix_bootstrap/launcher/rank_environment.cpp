#include "rank_environment.hpp"

#include <riseml/common/horovod_ranks.hpp>

namespace riseml::launch {

const std::vector<std::string>& horovod_rank_variable_names() { return horovod_variable_names(); }

std::vector<std::string> horovod_rank_variables(int rank, int ranks) {
  // One node: every rank is local; the cross numbers by Horovod's definition (common/).
  const std::uint32_t on_this_node[] = {static_cast<std::uint32_t>(ranks)};
  HorovodRanks numbers;
  numbers.rank = numbers.local_rank = static_cast<std::uint32_t>(rank);
  numbers.size = numbers.local_size = static_cast<std::uint32_t>(ranks);
  numbers.cross = horovod_cross(on_this_node, 0, numbers.local_rank);
  std::vector<std::string> variables;
  for (const auto& [name, value] : horovod_variables(numbers)) variables.push_back(name + "=" + value);
  return variables;
}

}  // namespace riseml::launch
