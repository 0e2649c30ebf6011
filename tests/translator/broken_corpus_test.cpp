// tests/translator/broken/NN-short-name.yml: files the translator must refuse, each with
// NN-short-name.expected, the exact diagnostics it prints (FILE:LINE:COL: error: KEY: MESSAGE,
// warnings included). Built-in site defaults, so /etc/riseml does not matter.
// Regenerate the .expected files with tests/translator/update-golden.sh and review them.
#include <gtest/gtest.h>

#include "test_support.hpp"

namespace riseml::test {
namespace {

fs::path broken_dir() { return source_dir() / "broken"; }

TEST(BrokenCorpus, HasAtLeastFortyFiles) { EXPECT_GE(yaml_files_in(broken_dir()).size(), 40u); }

TEST(BrokenCorpus, EveryExpectedFileHasItsInput) {
  for (const auto& entry : fs::directory_iterator(broken_dir())) {
    if (entry.path().extension() != ".expected") continue;
    fs::path input = entry.path();
    input.replace_extension(".yml");
    EXPECT_TRUE(fs::exists(input)) << entry.path() << " has no " << input.filename();
  }
}

class BrokenFile : public ::testing::TestWithParam<CorpusFile> {};

TEST_P(BrokenFile, IsRefusedWithTheExpectedMessages) {
  const fs::path file = GetParam();
  Translation t = translate_with_defaults(read_file(file), file.filename().string());
  EXPECT_FALSE(t.script.has_value()) << "translated, but it is broken";
  EXPECT_TRUE(t.diagnostics.has_errors());
  fs::path expected = file;
  expected.replace_extension(".expected");
  EXPECT_EQ(check_golden(expected, t.diagnostics.format()), "");
}

TEST_P(BrokenFile, EveryErrorSaysWhereAndWhatToDo) {
  const fs::path file = GetParam();
  Translation t = translate_with_defaults(read_file(file), file.filename().string());
  for (const auto& d : t.diagnostics.all()) {
    if (d.severity != Severity::error) continue;
    EXPECT_EQ(d.where.file, file.filename().string());
    // A message is a sentence with a way out, not a bare "invalid".
    EXPECT_GE(d.message.size(), 20u) << format_diagnostic(d);
  }
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BrokenFile);
INSTANTIATE_TEST_SUITE_P(Corpus, BrokenFile, ::testing::ValuesIn(corpus_files_in(broken_dir())),
                         [](const auto& info) { return test_name_for(info.param.path); });

}  // namespace
}  // namespace riseml::test
