#include "environment_block.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

namespace riseml::launch {
namespace {

TEST(EnvironmentBlock, IsANullTerminatedCopy) {
  EnvironmentBlock block({"A=1", "B=two"});
  char** entries = block.entries();
  EXPECT_STREQ(entries[0], "A=1");
  EXPECT_STREQ(entries[1], "B=two");
  EXPECT_EQ(entries[2], nullptr);
}

TEST(EnvironmentBlock, DropsInheritedPmixClientVariablesButKeepsTuning) {
  setenv("PMIX_NAMESPACE", "outer-job", 1);
  setenv("PMIX_MCA_gds", "hash", 1);
  std::vector<std::string> entries =
      EnvironmentBlock::inherited_without_pmix_client_variables().to_strings();
  unsetenv("PMIX_NAMESPACE");
  unsetenv("PMIX_MCA_gds");
  auto has = [&](const std::string& entry) {
    return std::find(entries.begin(), entries.end(), entry) != entries.end();
  };
  EXPECT_FALSE(has("PMIX_NAMESPACE=outer-job"));
  EXPECT_TRUE(has("PMIX_MCA_gds=hash"));
}

TEST(EnvironmentBlock, OverridesReplaceInheritedVariablesOfTheSameName) {
  setenv("HOROVOD_RANK", "7", 1);
  setenv("HOROVOD_RANKING", "kept", 1);
  std::vector<std::string> entries =
      EnvironmentBlock::inherited_without_pmix_client_variables({"HOROVOD_RANK=1", "NEW=x"})
          .to_strings();
  unsetenv("HOROVOD_RANK");
  unsetenv("HOROVOD_RANKING");
  auto count = [&](const std::string& prefix) {
    return std::count_if(entries.begin(), entries.end(),
                         [&](const std::string& e) { return e.starts_with(prefix); });
  };
  EXPECT_EQ(count("HOROVOD_RANK="), 1);
  EXPECT_EQ(count("HOROVOD_RANK=1"), 1);
  EXPECT_EQ(count("HOROVOD_RANKING=kept"), 1);
  EXPECT_EQ(count("NEW=x"), 1);
  EXPECT_FALSE(entries.empty());
  EXPECT_EQ(entries.back(), "NEW=x");
}

TEST(EnvironmentBlock, ClassifiesPmixVariables) {
  EXPECT_TRUE(is_pmix_client_variable("PMIX_RANK=3"));
  EXPECT_FALSE(is_pmix_client_variable("PMIX_MCA_ptl=usock"));
  EXPECT_FALSE(is_pmix_client_variable("PATH=/bin"));
}

}  // namespace
}  // namespace riseml::launch
