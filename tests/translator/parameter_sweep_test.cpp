// parameter_sweep.hpp: ranges keep the precision written, combinations in itertools.product
// order, placeholders found and substituted, environment names.
#include <gtest/gtest.h>

#include "parameter_sweep.hpp"

namespace riseml {
namespace {

using Values = std::vector<std::string>;

TEST(ExpandRange, TenthsGiveExactlyTenValues) {
  auto v = expand_range("0.1", "1", "0.1", 1000);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (Values{"0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0"}));
}

TEST(ExpandRange, IntegersStayIntegers) {
  EXPECT_EQ(*expand_range("2", "6", "1", 100), (Values{"2", "3", "4", "5", "6"}));
  EXPECT_EQ(*expand_range("3", "10", "3", 100), (Values{"3", "6", "9"})) << "max not reached";
}

TEST(ExpandRange, PrecisionIsTheLargerOfMinAndStep) {
  EXPECT_EQ(*expand_range("0.25", "1", "0.25", 100), (Values{"0.25", "0.5", "0.75", "1.0"}));
  EXPECT_EQ(*expand_range("1", "1.3", "0.1", 100), (Values{"1.0", "1.1", "1.2", "1.3"}));
  EXPECT_EQ(*expand_range("0.001", "0.003", "0.001", 100), (Values{"0.001", "0.002", "0.003"}));
}

TEST(ExpandRange, ExponentsCountAsDecimals) {
  EXPECT_EQ(*expand_range("1e-3", "3e-3", "1e-3", 100), (Values{"0.001", "0.002", "0.003"}));
}

TEST(ExpandRange, NegativeAndZeroCrossing) {
  EXPECT_EQ(*expand_range("-0.2", "0.2", "0.1", 100), (Values{"-0.2", "-0.1", "0.0", "0.1", "0.2"}));
}

TEST(ExpandRange, SingleValueWhenMinIsMax) {
  EXPECT_EQ(*expand_range("5", "5", "1", 100), (Values{"5"}));
}

TEST(ExpandRange, TooManyValuesIsNullopt) {
  EXPECT_FALSE(expand_range("1", "1000", "1", 999));
  EXPECT_TRUE(expand_range("1", "1000", "1", 1000));
  EXPECT_FALSE(expand_range("0", "1e300", "1e-300", 1000)) << "the span overflows";
}

TEST(ExpandRange, ManyDecimalStepsDoNotDrift) {
  auto v = expand_range("0", "100", "0.01", 100000);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->size(), 10001u);
  EXPECT_EQ(v->back(), "100.0");
  EXPECT_EQ((*v)[3], "0.03");
}

std::vector<Parameter> params(std::initializer_list<std::pair<std::string, Values>> list) {
  std::vector<Parameter> out;
  for (const auto& [name, values] : list) out.push_back({name, values, {}});
  return out;
}

TEST(Combinations, CountIsTheProduct) {
  EXPECT_EQ(combination_count(params({{"a", {"1", "2"}}, {"b", {"x", "y", "z"}}})), 6u);
  EXPECT_EQ(combination_count({}), 1u);
  EXPECT_EQ(combination_count(params({{"a", {}}})), 0u);
}

TEST(Combinations, CountSaturatesInsteadOfOverflowing) {
  std::vector<Parameter> many;
  for (int i = 0; i < 70; ++i) many.push_back({"p" + std::to_string(i), {"0", "1"}, {}});
  EXPECT_EQ(combination_count(many), SIZE_MAX);
}

TEST(Combinations, FirstParameterVariesSlowest) {
  auto p = params({{"a", {"1", "2"}}, {"b", {"x", "y", "z"}}});
  std::vector<Values> all;
  for (size_t i = 0; i < 6; ++i) all.push_back(combination(p, i));
  EXPECT_EQ(all, (std::vector<Values>{{"1", "x"}, {"1", "y"}, {"1", "z"},
                                      {"2", "x"}, {"2", "y"}, {"2", "z"}}));
}

TEST(Placeholders, FoundWithOrWithoutSpaces) {
  auto found = find_placeholders("a {{lr}} b {{ lr-decay }} c {{x_y.z}}");
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].name, "lr");
  EXPECT_EQ(found[0].offset, 2u);
  EXPECT_EQ(found[0].length, 6u);
  EXPECT_EQ(found[1].name, "lr-decay");
  EXPECT_EQ(found[2].name, "x_y.z");
}

TEST(Placeholders, JsonAndTemplatesAreNotPlaceholders) {
  EXPECT_TRUE(find_placeholders("'{\"a\": {\"b\": 1}}'").empty());
  EXPECT_TRUE(find_placeholders("{{ .Values.x | quote }}").empty());
  EXPECT_TRUE(find_placeholders("{{}} {{ }} {{unclosed").empty());
  auto found = find_placeholders("{{{lr}}}");
  ASSERT_EQ(found.size(), 0u) << "'{lr' is not a name";
}

TEST(Substitute, ReplacesOnlyDeclaredNames) {
  auto p = params({{"lr", {"0.1"}}, {"epochs", {"3"}}});
  EXPECT_EQ(substitute("x --lr {{lr}} --e {{ epochs }} --k {{other}}", p, {"0.1", "3"}),
            "x --lr 0.1 --e 3 --k {{other}}");
  EXPECT_EQ(substitute("{{lr}}{{lr}}", p, {"A", "B"}), "AA");
  EXPECT_EQ(substitute("no placeholders", p, {"A", "B"}), "no placeholders");
}

TEST(EnvName, UpperCaseWithUnderscores) {
  EXPECT_EQ(parameter_env_name("lr-decay"), "LR_DECAY");
  EXPECT_EQ(parameter_env_name("drop.out"), "DROP_OUT");
  EXPECT_EQ(parameter_env_name("num_layers"), "NUM_LAYERS");
  EXPECT_EQ(parameter_env_name("Lr2"), "LR2");
}

}  // namespace
}  // namespace riseml
