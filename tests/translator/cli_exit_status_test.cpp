// The riseml CLI on bad input: exit status 2, the diagnostics on stderr, and no output file
// (an existing one is left as it was). On good input: exit 0 and the script, atomically.
// Every run passes --site explicitly, so /etc/riseml/site.yml does not matter.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "test_support.hpp"
#include "yaml_document.hpp"

namespace riseml::test {
namespace {

const std::string kOldScript = "#!/bin/bash\necho 'an older script'\n";

std::string site_file() { return (source_dir() / "sites" / "pyxis-frameworks.yml").string(); }

#define REQUIRE_CLI()                                          \
  if (cli_path().empty()) GTEST_SKIP() << "no riseml CLI in this build (a fuzz build)"

std::vector<std::string> error_lines(const std::string& diagnostics) {
  std::vector<std::string> out;
  for (const auto& line : lines_of(diagnostics))
    if (line.find(": error: ") != std::string::npos) out.push_back(line);
  return out;
}

// Nothing but `keep` in `dir`: no temporary file left behind by the atomic writer.
void expect_only(const fs::path& dir, const std::vector<std::string>& keep) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    EXPECT_NE(std::find(keep.begin(), keep.end(), name), keep.end()) << "left behind: " << name;
  }
}

// Runs `riseml translate NAME -o OUT` in the file's folder (so messages name it as NAME),
// without and then with an existing OUT, and checks nothing was written either time.
void expect_refused_without_output(const fs::path& file, const std::string& expected_errors) {
  TempDir tmp;
  const fs::path out = tmp / "job.sbatch";
  const std::string name = file.filename().string();
  CommandResult r = run_command(
      {cli_path(), "translate", name, "-o", out.string(), "--site", site_file()},
      file.parent_path());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_FALSE(fs::exists(out)) << "an output file was written for a broken input";
  EXPECT_EQ(r.out, "");
  for (const auto& line : error_lines(expected_errors))
    EXPECT_NE(r.err.find(line + "\n"), std::string::npos) << "missing on stderr: " << line
                                                          << "\nstderr:\n" << r.err;
  EXPECT_NE(r.err.find("; nothing was written\n"), std::string::npos) << r.err;

  write_file(out, kOldScript);
  r = run_command({cli_path(), "translate", name, "-o", out.string(), "--site", site_file()},
                  file.parent_path());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(read_file(out), kOldScript) << "the existing output was changed";
  expect_only(tmp.path(), {"job.sbatch"});
}

class BrokenFileCli : public ::testing::TestWithParam<CorpusFile> {};

TEST_P(BrokenFileCli, ExitsTwoAndWritesNothing) {
  REQUIRE_CLI();
  const fs::path file = GetParam();
  fs::path expected = file;
  expected.replace_extension(".expected");
  expect_refused_without_output(file, fs::exists(expected) ? read_file(expected) : "");
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BrokenFileCli);
INSTANTIATE_TEST_SUITE_P(Corpus, BrokenFileCli,
                         ::testing::ValuesIn(corpus_files_in(source_dir() / "broken")),
                         [](const auto& info) { return test_name_for(info.param.path); });

TEST(CliExitStatus, ValidateAgreesWithTranslate) {
  REQUIRE_CLI();
  const fs::path broken = source_dir() / "broken" / "07-gpus-is-a-word.yml";
  CommandResult r = run_command({cli_path(), "validate", broken.filename().string(), "--site",
                                 site_file()},
                                broken.parent_path());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("07-gpus-is-a-word.yml:3:21: error: train.resources.gpus:"),
            std::string::npos)
      << r.err;
  TempDir tmp;
  write_file(tmp / "riseml.yml", "project: p\ntrain: {run: x, resources: {cpus: 1}}\n");
  r = run_command({cli_path(), "validate", "riseml.yml", "--site", site_file()}, tmp.path());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "") << "validate prints no script";
  EXPECT_NE(r.err.find("riseml.yml is valid"), std::string::npos) << r.err;
}

TEST(CliExitStatus, HugeFileWritesNothing) {
  REQUIRE_CLI();
  TempDir tmp;
  write_file(tmp / "riseml.yml", "project: p\n# " + std::string(kMaxYamlBytes, 'x') + "\n");
  expect_refused_without_output(tmp / "riseml.yml", "");
}

TEST(CliExitStatus, DeeplyNestedFileWritesNothing) {
  REQUIRE_CLI();
  TempDir tmp;
  write_file(tmp / "riseml.yml",
             "project: p\ndeep: " + std::string(10000, '[') + std::string(10000, ']') + "\n");
  expect_refused_without_output(tmp / "riseml.yml", "");
}

TEST(CliExitStatus, MissingFileExitsTwo) {
  REQUIRE_CLI();
  TempDir tmp;
  CommandResult r = run_command({cli_path(), "translate", "nowhere.yml", "-o", "out.sbatch",
                                 "--site", site_file()},
                                tmp.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("nowhere.yml: error: cannot read the file"), std::string::npos) << r.err;
  expect_only(tmp.path(), {});
}

TEST(CliExitStatus, DirectoryInsteadOfFileExitsTwo) {
  REQUIRE_CLI();
  TempDir tmp;
  fs::create_directory(tmp / "job");
  CommandResult r = run_command({cli_path(), "validate", "job", "--site", site_file()}, tmp.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("job: error: this is a directory"), std::string::npos) << r.err;
}

TEST(CliExitStatus, BrokenSiteFileExitsTwo) {
  REQUIRE_CLI();
  TempDir tmp;
  write_file(tmp / "site.yml", "containers: docker\n");
  write_file(tmp / "riseml.yml", "project: p\ntrain: {run: x, resources: {cpus: 1}}\n");
  CommandResult r = run_command({cli_path(), "translate", "riseml.yml", "-o", "out.sbatch",
                                 "--site", "site.yml"},
                                tmp.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("site.yml:1:13: error: containers: must be pyxis or none"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(tmp / "out.sbatch"));
}

TEST(CliExitStatus, ValidFileWritesAnExecutableScriptAtomically) {
  REQUIRE_CLI();
  TempDir tmp;
  const std::string text =
      "project: p\ntrain:\n  resources: {gpus: 1, cpus: 2, mem: 1024}\n  run: python x.py\n";
  write_file(tmp / "riseml.yml", text);
  write_file(tmp / "out.sbatch", kOldScript);
  CommandResult r = run_command({cli_path(), "translate", "riseml.yml", "-o", "out.sbatch",
                                 "--site", site_file()},
                                tmp.path());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "");
  Translation t = translate_text(text, "riseml.yml", test_site("pyxis-frameworks.yml"));
  ASSERT_TRUE(t.script);
  EXPECT_EQ(read_file(tmp / "out.sbatch"), *t.script);
  struct stat st {};
  ASSERT_EQ(stat((tmp / "out.sbatch").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  expect_only(tmp.path(), {"riseml.yml", "out.sbatch"});

  r = run_command({cli_path(), "translate", "riseml.yml", "--site", site_file()}, tmp.path());
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, *t.script) << "without -o the script goes to stdout";
}

TEST(CliExitStatus, UnwritableOutputExitsOne) {
  REQUIRE_CLI();
  TempDir tmp;
  write_file(tmp / "riseml.yml", "project: p\ntrain: {run: x, resources: {cpus: 1}}\n");
  CommandResult r = run_command({cli_path(), "translate", "riseml.yml", "-o",
                                 "no-such-folder/out.sbatch", "--site", site_file()},
                                tmp.path());
  EXPECT_EQ(r.status, 1) << "not the user's riseml.yml: exit 1, not 2";
  EXPECT_NE(r.err.find("cannot create a file in no-such-folder"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace riseml::test
