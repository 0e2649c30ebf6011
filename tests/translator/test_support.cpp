#include "test_support.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace riseml::test {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const fs::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

fs::path source_dir() { return RISEML_TEST_SOURCE_DIR; }

fs::path examples_dir() {
  const char* env = std::getenv("RISEML_EXAMPLES_DIR");
  if (env && *env) return env;
  return RISEML_EXAMPLES_DIR_DEFAULT;
}

std::vector<fs::path> yaml_files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void PrintTo(const CorpusFile& file, std::ostream* os) { *os << file.path.filename().string(); }

std::vector<CorpusFile> corpus_files_in(const fs::path& dir) {
  std::vector<CorpusFile> out;
  for (const auto& f : yaml_files_in(dir)) out.push_back({f});
  return out;
}

std::string test_name_for(const fs::path& file) {
  std::string name = file.stem().string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

bool updating_golden() {
  const char* env = std::getenv("RISEML_UPDATE_GOLDEN");
  return env && std::string(env) == "1";
}

std::string check_golden(const fs::path& path, const std::string& actual) {
  std::error_code ec;
  if (updating_golden()) {
    if (actual.empty())
      fs::remove(path, ec);
    else
      write_file(path, actual);
    return "";
  }
  std::string expected = fs::exists(path, ec) ? read_file(path) : "";
  if (expected == actual) return "";
  return "differs from " + path.string() +
         " (if the change is intended, run tests/translator/update-golden.sh and review the "
         "diff)\n--- expected\n" + expected + "--- actual\n" + actual;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/riseml-test.XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

CommandResult run_command(const std::vector<std::string>& argv, const fs::path& cwd) {
  TempDir tmp;
  const std::string out_path = tmp / "stdout", err_path = tmp / "stderr";
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int null = open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || null < 0) _exit(126);
    dup2(null, 0);
    dup2(out, 1);
    dup2(err, 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error("waitpid failed");
  }
  CommandResult r;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  return r;
}

std::string cli_path() {
#ifdef RISEML_CLI
  return RISEML_CLI;
#else
  return "";
#endif
}

std::string bash_syntax_errors(const std::string& script) {
  TempDir tmp;
  write_file(tmp / "job.sbatch", script);
  CommandResult r = run_command({"bash", "-n", (tmp / "job.sbatch").string()});
  if (r.status == 0 && r.err.empty()) return "";
  return "bash -n exited " + std::to_string(r.status) + ": " + r.err;
}

Translation translate_with_defaults(const std::string& text, const std::string& name) {
  return translate_text(text, name, SiteConfig{});
}

SiteConfig test_site(const std::string& name) {
  Diagnostics diags;
  auto site = load_site_config((source_dir() / "sites" / name).string(), diags);
  EXPECT_TRUE(site.has_value()) << diags.format();
  EXPECT_EQ(diags.format(), "") << "the test site file " << name << " has warnings";
  return site ? *site : SiteConfig{};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> lines_starting_with(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& line : lines_of(text))
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

bool has_line(const std::string& text, const std::string& line) {
  for (const auto& l : lines_of(text))
    if (l == line) return true;
  return false;
}

std::vector<std::string> sbatch_options(const std::string& script) {
  std::vector<std::string> out;
  for (const auto& line : lines_starting_with(script, "#SBATCH ")) out.push_back(line.substr(8));
  return out;
}

std::vector<std::string> srun_lines(const std::string& script) {
  return lines_starting_with(script, "srun ");
}

namespace {

YAML::Node merged(const YAML::Node& base, const YAML::Node& fragment) {
  if (!base.IsMap() || !fragment.IsMap()) return YAML::Clone(fragment);
  YAML::Node out = YAML::Clone(base);
  for (const auto& kv : fragment) {
    const std::string key = kv.first.Scalar();
    out[key] = out[key] ? merged(out[key], kv.second) : YAML::Clone(kv.second);
  }
  return out;
}

}  // namespace

std::string merge_fragment(const std::string& base_text, const std::string& fragment_text) {
  YAML::Node base = YAML::Load(base_text);
  YAML::Node fragment = YAML::Load(fragment_text);
  if (!fragment["train"]) {
    YAML::Node wrapped;
    wrapped["train"] = fragment;
    fragment = wrapped;
  }
  YAML::Emitter out;
  out << merged(base, fragment);
  return std::string(out.c_str()) + "\n";
}

}  // namespace riseml::test
