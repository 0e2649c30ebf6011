#include "rank_environment.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace riseml::launch {
namespace {

TEST(RankEnvironment, HorovodVariablesOfOneNodeJobs) {
  EXPECT_EQ(horovod_rank_variables(2, 3),
            (std::vector<std::string>{"HOROVOD_RANK=2", "HOROVOD_SIZE=3", "HOROVOD_LOCAL_RANK=2",
                                      "HOROVOD_LOCAL_SIZE=3", "HOROVOD_CROSS_RANK=0",
                                      "HOROVOD_CROSS_SIZE=1"}));
  EXPECT_EQ(horovod_rank_variables(0, 1),
            (std::vector<std::string>{"HOROVOD_RANK=0", "HOROVOD_SIZE=1", "HOROVOD_LOCAL_RANK=0",
                                      "HOROVOD_LOCAL_SIZE=1", "HOROVOD_CROSS_RANK=0",
                                      "HOROVOD_CROSS_SIZE=1"}));
}

TEST(RankEnvironment, NamesMatchTheVariables) {
  const std::vector<std::string> variables = horovod_rank_variables(1, 4);
  const std::vector<std::string>& names = horovod_rank_variable_names();
  ASSERT_EQ(names.size(), 6u);
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_TRUE(variables[i].starts_with(names[i] + "=")) << variables[i];
  }
}

}  // namespace
}  // namespace riseml::launch
