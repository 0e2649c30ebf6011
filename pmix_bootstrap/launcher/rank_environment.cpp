#include "rank_environment.hpp"

namespace riseml::launch {

const std::vector<std::string>& horovod_rank_variable_names() {
  static const std::vector<std::string> names{"HOROVOD_RANK",       "HOROVOD_SIZE",
                                              "HOROVOD_LOCAL_RANK", "HOROVOD_LOCAL_SIZE",
                                              "HOROVOD_CROSS_RANK", "HOROVOD_CROSS_SIZE"};
  return names;
}

std::vector<std::string> horovod_rank_variables(int rank, int ranks) {
  const std::vector<std::string>& names = horovod_rank_variable_names();
  const int values[] = {rank, ranks, rank, ranks, 0, 1};
  std::vector<std::string> variables;
  for (std::size_t i = 0; i < names.size(); ++i) {
    variables.push_back(names[i] + "=" + std::to_string(values[i]));
  }
  return variables;
}

}  // namespace riseml::launch
