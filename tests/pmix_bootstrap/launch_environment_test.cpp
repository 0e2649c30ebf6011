#include "launch_environment.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace riseml::pmix {
namespace {

EnvironmentLookup lookup_in(const std::map<std::string, std::string>& variables) {
  return [variables](const char* name) -> const char* {
    auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  };
}

TEST(LaunchEnvironment, NothingSetMeansALoneProcess) {
  LaunchEnvironment launch = inspect_launch_environment(lookup_in({}));
  EXPECT_FALSE(launch.has_pmix_server);
  EXPECT_FALSE(launch.sibling_tasks_without_pmix);
}

TEST(LaunchEnvironment, PmixServerVariablesMeanAPmixLaunch) {
  EXPECT_TRUE(inspect_launch_environment(lookup_in({{"PMIX_NAMESPACE", "x"}})).has_pmix_server);
  EXPECT_TRUE(
      inspect_launch_environment(lookup_in({{"PMIX_SERVER_URI41", "pmix-server.1;tcp4://"}}))
          .has_pmix_server);
  EXPECT_FALSE(inspect_launch_environment(lookup_in({{"PMIX_MCA_gds", "hash"}})).has_pmix_server);
}

TEST(LaunchEnvironment, SrunWithoutPmixIsNamed) {
  LaunchEnvironment launch = inspect_launch_environment(lookup_in({{"SLURM_STEP_NUM_TASKS", "4"}}));
  ASSERT_TRUE(launch.sibling_tasks_without_pmix);
  EXPECT_EQ(*launch.sibling_tasks_without_pmix, "srun started 4 tasks (SLURM_STEP_NUM_TASKS=4)");
}

TEST(LaunchEnvironment, OneTaskOrGarbageIsNotASiblingLaunch) {
  EXPECT_FALSE(inspect_launch_environment(lookup_in({{"SLURM_STEP_NUM_TASKS", "1"}}))
                   .sibling_tasks_without_pmix);
  EXPECT_FALSE(inspect_launch_environment(lookup_in({{"OMPI_COMM_WORLD_SIZE", "4x"}}))
                   .sibling_tasks_without_pmix);
  EXPECT_TRUE(inspect_launch_environment(lookup_in({{"OMPI_COMM_WORLD_SIZE", "2"}}))
                  .sibling_tasks_without_pmix);
  EXPECT_TRUE(
      inspect_launch_environment(lookup_in({{"PMI_SIZE", "8"}})).sibling_tasks_without_pmix);
}

TEST(LaunchEnvironment, TheRankBeforeConnectingComesFromPmixRank) {
  EXPECT_EQ(rank_before_connecting(lookup_in({{"PMIX_RANK", "3"}}), "n1"), "rank 3 on host n1");
  EXPECT_EQ(rank_before_connecting(lookup_in({}), "n1"), "the process on host n1");
  EXPECT_EQ(rank_before_connecting(lookup_in({{"PMIX_RANK", "x"}}), "n1"),
            "the process on host n1");
}

TEST(LaunchEnvironment, HintNamesEveryWayToStart) {
  std::string hint = how_to_start_hint();
  EXPECT_NE(hint.find("srun --mpi=pmix"), std::string::npos);
  EXPECT_NE(hint.find("riseml-launch -n N"), std::string::npos);
  EXPECT_NE(hint.find("mpirun"), std::string::npos);
}

}  // namespace
}  // namespace riseml::pmix
