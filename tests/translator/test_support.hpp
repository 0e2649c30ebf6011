// Helpers shared by the translator tests: files, folders, the examples corpus, running the CLI
// and bash, and small queries on generated scripts.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "site_config.hpp"
#include "translation.hpp"

namespace riseml::test {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path);
void write_file(const fs::path& path, const std::string& content);

// tests/translator in the source tree.
fs::path source_dir();
// The real riseml.yml corpus: $RISEML_EXAMPLES_DIR, else the folder CMake was given
// (default tests/data/riseml-examples in the repository). May not exist: callers check.
fs::path examples_dir();
// Every *.yml directly in `dir`, sorted by name; empty when `dir` does not exist.
std::vector<fs::path> yaml_files_in(const fs::path& dir);

// A corpus file as a test parameter: ctest shows "GetParam() = NAME", not the whole path.
struct CorpusFile {
  fs::path path;
  operator const fs::path&() const { return path; }
};
void PrintTo(const CorpusFile& file, std::ostream* os);
// yaml_files_in(dir) as test parameters.
std::vector<CorpusFile> corpus_files_in(const fs::path& dir);

// A gtest-safe name for a file: 'docs_guide-x.yml' -> 'docs_guide_x'.
std::string test_name_for(const fs::path& file);

// Golden files are rewritten instead of compared when RISEML_UPDATE_GOLDEN=1.
bool updating_golden();
// Compares `actual` with the file at `path` (absent = empty), or rewrites it when updating
// (an empty `actual` removes the file). Returns a gtest-ready failure message, empty when equal.
std::string check_golden(const fs::path& path, const std::string& actual);

// A fresh folder under $TMPDIR, removed with everything in it at the end of the scope.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

struct CommandResult {
  int status = -1;  // exit status; 128+N when killed by signal N
  std::string out;
  std::string err;
};
// Runs argv (no shell) with stdout and stderr captured; `cwd` empty = the current folder.
CommandResult run_command(const std::vector<std::string>& argv, const fs::path& cwd = {});

// The riseml CLI built beside the tests, or empty in builds without it.
std::string cli_path();

// `bash -n` on the script: empty when the syntax is fine, else bash's complaint.
std::string bash_syntax_errors(const std::string& script);

// Translation with the built-in defaults (no site file), as the golden files were made.
Translation translate_with_defaults(const std::string& text, const std::string& name);
// The site file tests/translator/sites/<name>, loaded; fails the test if it does not load.
SiteConfig test_site(const std::string& name);

// Lines of a script, and lines that start with a prefix.
std::vector<std::string> lines_of(const std::string& text);
std::vector<std::string> lines_starting_with(const std::string& text, const std::string& prefix);
bool has_line(const std::string& text, const std::string& line);
// The #SBATCH options in order, without the '#SBATCH ' prefix.
std::vector<std::string> sbatch_options(const std::string& script);
// The srun lines in order.
std::vector<std::string> srun_lines(const std::string& script);

// Deep-merges the YAML `fragment` into `base`: mappings merge key by key, anything else
// replaces. A fragment without a top-level `train:` is a piece of the train section.
std::string merge_fragment(const std::string& base, const std::string& fragment);

}  // namespace riseml::test
