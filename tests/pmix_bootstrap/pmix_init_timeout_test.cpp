// How long PMIx_Init may take: the program's option, else RISEML_PMIX_INIT_TIMEOUT_S, else 60 s;
// a bad value is an error that names the rank, the host and the fix.
#include "pmix_init_timeout.hpp"

#include <gtest/gtest.h>

#include <map>
#include <riseml/pmix/bootstrap_error.hpp>

namespace riseml::pmix {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

EnvironmentLookup lookup_in(const std::map<std::string, std::string>& variables) {
  return [variables](const char* name) -> const char* {
    auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  };
}

std::string error_for(const std::string& value) {
  try {
    pmix_init_timeout(std::nullopt, lookup_in({{"RISEML_PMIX_INIT_TIMEOUT_S", value}}),
                      "rank 3 on host n1");
  } catch (const BootstrapError& error) {
    return error.what();
  }
  return "no error";
}

TEST(PmixInitTimeout, SixtySecondsByDefault) {
  EXPECT_EQ(pmix_init_timeout(std::nullopt, lookup_in({}), "rank 0 on host n1"), seconds(60));
}

TEST(PmixInitTimeout, TheVariableSetsIt) {
  EXPECT_EQ(pmix_init_timeout(std::nullopt, lookup_in({{"RISEML_PMIX_INIT_TIMEOUT_S", "120"}}),
                              "rank 0 on host n1"),
            seconds(120));
}

TEST(PmixInitTimeout, TheProgramsOptionWins) {
  EXPECT_EQ(pmix_init_timeout(milliseconds(1500),
                              lookup_in({{"RISEML_PMIX_INIT_TIMEOUT_S", "120"}}), "rank 0"),
            milliseconds(1500));
}

TEST(PmixInitTimeout, ABadValueSaysWhoWhatAndHowToFixIt) {
  EXPECT_EQ(error_for("soon"),
            "riseml: rank 3 on host n1: RISEML_PMIX_INIT_TIMEOUT_S='soon' is not a whole number "
            "of seconds from 1 to 604800; set it to how long PMIx_Init may take (say 120), or "
            "unset it for 60 s");
  for (const char* bad : {"", "0", "-5", "1.5", "12s", "604801", "99999999999999999999"}) {
    EXPECT_NE(error_for(bad).find("is not a whole number of seconds"), std::string::npos) << bad;
  }
  EXPECT_EQ(error_for("604800"), "no error");
}

}  // namespace
}  // namespace riseml::pmix
