// The documentation fragments (*_fragment.yml): alone, each gets its message (checked by
// golden_examples_test.cpp); merged into fragment-base.yml, each translates, except the one
// that is broken YAML.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "test_support.hpp"

namespace riseml::test {
namespace {

std::vector<CorpusFile> fragments() {
  std::vector<CorpusFile> out;
  for (const auto& f : yaml_files_in(examples_dir()))
    if (f.stem().string().ends_with("_fragment")) out.push_back({f});
  return out;
}

bool is_broken_yaml(const fs::path& fragment) {
  return fragment.stem().string().find("broken_yaml") != std::string::npos;
}

TEST(GoldenFragments, CorpusHasFragments) {
  ASSERT_TRUE(fs::is_directory(examples_dir())) << "no corpus at " << examples_dir();
  EXPECT_GE(fragments().size(), 5u);
}

class Fragment : public ::testing::TestWithParam<CorpusFile> {};

TEST_P(Fragment, DoesNotTranslateAlone) {
  const fs::path file = GetParam();
  Translation t = translate_with_defaults(read_file(file), file.filename().string());
  EXPECT_FALSE(t.script.has_value()) << "a fragment is not a whole riseml.yml";
  EXPECT_TRUE(t.diagnostics.has_errors());
}

TEST_P(Fragment, TranslatesMergedIntoTheBase) {
  const fs::path file = GetParam();
  const std::string name = file.stem().string();
  const std::string base = read_file(source_dir() / "fragment-base.yml");
  const fs::path golden = source_dir() / "golden";
  if (is_broken_yaml(file)) {
    EXPECT_THROW(merge_fragment(base, read_file(file)), YAML::ParserException)
        << "named broken_yaml, but it parses";
    return;
  }
  const std::string merged =
      "# " + file.filename().string() + " merged into tests/translator/fragment-base.yml\n" +
      merge_fragment(base, read_file(file));
  EXPECT_EQ(check_golden(golden / (name + ".merged.yml"), merged), "");

  Translation t = translate_with_defaults(merged, name + ".merged.yml");
  ASSERT_TRUE(t.script.has_value()) << t.diagnostics.format();
  EXPECT_EQ(check_golden(golden / (name + ".merged.sbatch"), *t.script), "");
  EXPECT_EQ(check_golden(golden / (name + ".merged.warnings"), t.diagnostics.format()), "");
  EXPECT_EQ(bash_syntax_errors(*t.script), "");
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Fragment);
INSTANTIATE_TEST_SUITE_P(Corpus, Fragment, ::testing::ValuesIn(fragments()),
                         [](const auto& info) { return test_name_for(info.param.path); });

}  // namespace
}  // namespace riseml::test
