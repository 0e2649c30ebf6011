// Every real riseml.yml in tests/data/riseml-examples translates to its checked-in golden
// result: golden/<name>.sbatch (+ <name>.warnings) when valid, golden/<name>.diagnostics when
// not. Built-in site defaults (SiteConfig{}), so /etc/riseml does not matter.
// Regenerate with tests/translator/update-golden.sh, then review the diff.
#include <set>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "test_support.hpp"

namespace riseml::test {
namespace {

fs::path golden_dir() { return source_dir() / "golden"; }

TEST(GoldenExamples, ExamplesFolderIsPresent) {
  const fs::path dir = examples_dir();
  ASSERT_TRUE(fs::is_directory(dir))
      << "the real riseml.yml corpus is missing: expected it at " << dir
      << ". The repository carries it in tests/data/riseml-examples; elsewhere point "
         "RISEML_EXAMPLES_DIR (environment, at test time) or -DRISEML_EXAMPLES_DIR (CMake) at it.";
  // SOURCES.md describes 40 files; fewer means a partial checkout.
  EXPECT_GE(yaml_files_in(dir).size(), 40u) << "the corpus in " << dir << " is incomplete";
}

class GoldenExample : public ::testing::TestWithParam<CorpusFile> {};

TEST_P(GoldenExample, TranslatesAsGolden) {
  const fs::path file = GetParam();
  const std::string name = file.stem().string();
  Translation t = translate_with_defaults(read_file(file), file.filename().string());
  const std::string diagnostics = t.diagnostics.format();
  if (t.script) {
    EXPECT_FALSE(fs::exists(golden_dir() / (name + ".diagnostics")) && !updating_golden())
        << name << " now translates, but golden/" << name << ".diagnostics expects errors";
    std::string failure = check_golden(golden_dir() / (name + ".sbatch"), *t.script);
    EXPECT_EQ(failure, "");
    failure = check_golden(golden_dir() / (name + ".warnings"), diagnostics);
    EXPECT_EQ(failure, "");
    EXPECT_EQ(bash_syntax_errors(*t.script), "") << "the generated script is not valid bash";
    if (updating_golden()) fs::remove(golden_dir() / (name + ".diagnostics"));
  } else {
    EXPECT_FALSE(fs::exists(golden_dir() / (name + ".sbatch")) && !updating_golden())
        << name << " no longer translates:\n" << diagnostics;
    ASSERT_NE(diagnostics, "") << "no script and no message";
    std::string failure = check_golden(golden_dir() / (name + ".diagnostics"), diagnostics);
    EXPECT_EQ(failure, "");
    if (updating_golden()) {
      fs::remove(golden_dir() / (name + ".sbatch"));
      fs::remove(golden_dir() / (name + ".warnings"));
    }
  }
}

TEST_P(GoldenExample, EveryErrorNamesItsPlace) {
  const fs::path file = GetParam();
  Translation t = translate_with_defaults(read_file(file), file.filename().string());
  for (const auto& d : t.diagnostics.all()) {
    EXPECT_EQ(d.where.file, file.filename().string());
    EXPECT_FALSE(d.message.empty());
  }
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GoldenExample);
INSTANTIATE_TEST_SUITE_P(Corpus, GoldenExample, ::testing::ValuesIn(corpus_files_in(examples_dir())),
                         [](const auto& info) { return test_name_for(info.param.path); });

// The reference parser's verdicts (EXPECTED_bbc396d.json): what it accepted, we translate,
// except where it let an undeclared {{placeholder}} through, which is an error in ours
// (the corpus README: docs_guide_distributed_tensorflow.yml, thirdparty_glotnet.yml).
TEST(GoldenExamples, EveryFileTheOldParserAcceptedTranslates) {
  const fs::path expected = examples_dir() / "EXPECTED_bbc396d.json";
  ASSERT_TRUE(fs::exists(expected)) << expected << " is missing";
  YAML::Node verdicts = YAML::LoadFile(expected.string());  // JSON is YAML
  int valid = 0, undeclared_only = 0;
  for (const auto& kv : verdicts) {
    const std::string name = kv.first.Scalar();
    if (kv.second["outcome"].Scalar() != "VALID") continue;
    ++valid;
    Translation t = translate_with_defaults(read_file(examples_dir() / name), name);
    if (t.script) continue;
    for (const auto& d : t.diagnostics.all()) {
      if (d.severity != Severity::error) continue;
      EXPECT_NE(d.message.find("names no parameter"), std::string::npos)
          << name << " was valid for RiseML, and this is not an undeclared placeholder:\n"
          << format_diagnostic(d);
      ++undeclared_only;
    }
  }
  EXPECT_EQ(valid, 17);
  EXPECT_LE(undeclared_only, 3) << "only the two files the README names";
}

// Each golden file belongs to a file of the corpus (or a merged fragment), and each corpus
// file has exactly one outcome checked in.
TEST(GoldenExamples, GoldenFilesMatchTheCorpus) {
  if (!fs::is_directory(examples_dir())) GTEST_SKIP() << "no corpus; see ExamplesFolderIsPresent";
  std::set<std::string> names;
  for (const auto& f : yaml_files_in(examples_dir())) names.insert(f.stem().string());
  for (const auto& entry : fs::directory_iterator(golden_dir())) {
    const std::string file = entry.path().filename().string();
    const std::string stem = file.substr(0, file.find('.'));
    EXPECT_TRUE(names.count(stem)) << "golden/" << file << " belongs to no file of the corpus";
  }
  for (const auto& name : names) {
    const bool script = fs::exists(golden_dir() / (name + ".sbatch"));
    const bool errors = fs::exists(golden_dir() / (name + ".diagnostics"));
    EXPECT_NE(script, errors) << name << ": exactly one of .sbatch and .diagnostics is expected";
  }
}

}  // namespace
}  // namespace riseml::test
