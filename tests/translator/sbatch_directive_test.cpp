// sbatch's reading of #SBATCH lines and the quoting that keeps a value one argument. The
// expectations are what sbatch 22.05 made of these lines on the testbed (scontrol show job).
#include <gtest/gtest.h>

#include <random>

#include "sbatch_directive.hpp"

namespace riseml {
namespace {

using Args = std::vector<std::string>;

TEST(SbatchDirective, ArgumentsAsSbatchReadsThem) {
  // --error="a b#c\"d\\e'f" gave StdErr=.../a b#c"d\e'f; --output=plain'quoted part'tail gave
  // .../plainquoted parttail; --comment="x --time=1" gave Comment=x --time=1.
  EXPECT_EQ(sbatch_directive_arguments(R"(--error="a b#c\"d\\e'f")"), Args{R"(--error=a b#c"d\e'f)"});
  EXPECT_EQ(sbatch_directive_arguments("--output=plain'quoted part'tail"), Args{"--output=plainquoted parttail"});
  EXPECT_EQ(sbatch_directive_arguments("--comment=\"x --time=1\""), Args{"--comment=x --time=1"});
  EXPECT_EQ(sbatch_directive_arguments("--error=x --time=1"), (Args{"--error=x", "--time=1"}));
  EXPECT_EQ(sbatch_directive_arguments("-N2 -n4  --time=1 # two tasks"), (Args{"-N2", "-n4", "--time=1"}));
  EXPECT_EQ(sbatch_directive_arguments("--output=logs#1.out"), Args{"--output=logs"});
  EXPECT_EQ(sbatch_directive_arguments("  "), Args{});
}

TEST(SbatchDirective, AQuotedValueIsReadBackAsItWas) {
  for (const std::string v : {"plain", "my logs/%x-%j.out", "a#b", "\"q\"", "back\\slash", "it's", "x --time=1",
                              "tab\there", "", "\\", "#", "'\"'"}) {
    const std::string line = "--comment=" + sbatch_argument(v);
    EXPECT_EQ(sbatch_directive_arguments(line), Args{"--comment=" + v}) << line;
  }
  EXPECT_EQ(sbatch_argument("logs/%x-%j.out"), "logs/%x-%j.out");  // plain values stay bare
  // Any printable ASCII: one argument, the same bytes.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> ch(32, 126), len(0, 24);
  for (int k = 0; k < 2000; ++k) {
    std::string v;
    for (int n = len(rng); n > 0; --n) v += static_cast<char>(ch(rng));
    EXPECT_EQ(sbatch_directive_arguments("--x=" + sbatch_argument(v)), Args{"--x=" + v}) << v;
  }
}

}  // namespace
}  // namespace riseml
