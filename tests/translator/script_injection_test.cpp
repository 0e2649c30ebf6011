// Every string a riseml.yml or a site file gives reaches the sbatch script somewhere: a `#`
// comment, an #SBATCH line, a quoted shell word, a run or install command. For each such field:
// - control characters are refused (only commands keep their line breaks and tabs), with an
//   error that names the file, line and key and shows them escaped;
// - values built to break out of their place ($(...), `...`, quotes, ';', '#') are refused or
//   stay inert: the script passes bash -n and, run with srun and module stubbed in a temporary
//   folder, creates no file, and the values arrive exactly as written.
#include <gtest/gtest.h>

#include <functional>

#include "test_support.hpp"
#include "utf8.hpp"

namespace riseml::test {
namespace {

// ---- running a script with Slurm stubbed -------------------------------------------------

// A folder with `srun` and `module` stubs that record their arguments (NUL-separated) and
// the variable HOSTILE as each step would see it. With RISEML_TEST_EXECUTE=1 srun runs the
// step's `bash -c` part, so a test can see what a command does.
class Sandbox {
 public:
  Sandbox() {
    fs::create_directories(dir_ / "bin");
    fs::create_directories(dir_ / "records");
    write_stub("srun", R"(n=$(cat "$RISEML_TEST_DIR/count" 2>/dev/null || echo 0)
echo $((n + 1)) > "$RISEML_TEST_DIR/count"
printf '%s\0' "$@" > "$RISEML_TEST_DIR/srun.$n"
if [ -n "${HOSTILE+set}" ]; then printf '%s' "$HOSTILE" > "$RISEML_TEST_DIR/hostile.$n"; fi
if [ "${RISEML_TEST_EXECUTE:-}" = 1 ]; then
  while [ $# -gt 0 ] && [ "$1" != bash ]; do shift; done
  exec "$@"
fi
)");
    write_stub("module", R"(printf '%s\0' "$@" > "$RISEML_TEST_DIR/module")");
  }

  const fs::path& path() const { return dir_.path(); }
  // Where a hostile value tries to create a file.
  std::string target() const { return (dir_ / "INJECTED").string(); }
  bool injected() const { return fs::exists(dir_ / "INJECTED"); }

  CommandResult run(const std::string& script, bool execute_steps = false) {
    write_file(dir_ / "job.sbatch", script);
    const std::string d = path().string();
    return run_command(
        {"env", "-i", "PATH=" + d + "/bin:/usr/bin:/bin", "HOME=" + d, "SLURM_JOB_ID=42",
         "SLURM_ARRAY_JOB_ID=42", "SLURM_ARRAY_TASK_ID=0", "SLURM_JOB_NUM_NODES=1",
         "SLURM_SUBMIT_DIR=" + d, "RISEML_TEST_DIR=" + d + "/records",
         std::string("RISEML_TEST_EXECUTE=") + (execute_steps ? "1" : "0"), "bash",
         d + "/job.sbatch"},
        path());
  }

  // The arguments of the n-th srun call, and the HOSTILE it saw ("" when unset).
  std::vector<std::string> srun_arguments(int n) const {
    const std::string raw = read_file(dir_ / "records" / ("srun." + std::to_string(n)));
    std::vector<std::string> args;
    for (size_t begin = 0, end; (end = raw.find('\0', begin)) != std::string::npos; begin = end + 1)
      args.push_back(raw.substr(begin, end - begin));
    return args;
  }
  std::string hostile_seen(int n) const {
    const fs::path p = dir_ / "records" / ("hostile." + std::to_string(n));
    return fs::exists(p) ? read_file(p) : "<unset>";
  }
  int srun_calls() const {
    const fs::path p = dir_ / "records" / "count";
    return fs::exists(p) ? std::stoi(read_file(p)) : 0;
  }

 private:
  void write_stub(const std::string& name, const std::string& body) {
    const fs::path p = dir_ / "bin" / name;
    write_file(p, "#!/bin/bash\n" + body + "\n");
    fs::permissions(p, fs::perms::owner_all);
  }

  TempDir dir_;
};

// The sandbox notices an injection when there is one: a test that could not fail proves nothing.
TEST(ScriptInjection, TheSandboxSeesAnInjectionWhenThereIsOne) {
  Sandbox box;
  CommandResult r = box.run("#!/bin/bash\necho $(touch " + box.target() + ")\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(box.injected());
}

// ---- the fields ---------------------------------------------------------------------------

// A field: a riseml.yml and a site file with @V@ where the value goes, inside double quotes
// (so YAML escapes write control characters), and the key an error about it names.
struct Field {
  std::string key;
  std::string job;
  std::string site;  // empty: the built-in defaults
  // text: one line; command: run/install lines (line breaks and tabs too), which run by
  // design; site_command: the site's one-line command for tf-config, which runs by design.
  enum Kind { text, command, site_command } kind = text;
  // Whether a value without control characters translates (else it is refused by the key's
  // own syntax: a name, a time, a word).
  std::function<bool(const std::string&)> accepts;
};

bool any(const std::string&) {
  return true;
}
bool none(const std::string&) {
  return false;
}
bool image_like(const std::string& v) {
  return v.find_first_of(" '\"") == std::string::npos;
}
bool plain_word(const std::string& v) {
  return v.find_first_of(" \t'\"\\$`") == std::string::npos;
}
// output_root: only $NAME / ${NAME} expand inside its double quotes (of the values below,
// ${IFS} is the one variable).
bool run_time_path(std::string v) {
  for (size_t at; (at = v.find("${IFS}")) != std::string::npos;) v.erase(at, 6);
  return v.find_first_of("\"'`\\}$") == std::string::npos;
}

const char* kJob = "project: p\ntrain:\n  resources: {cpus: 1}\n  run: echo ok\n";
const char* kFrameworkJob =
    "project: p\ntrain:\n  framework: pytorch\n  resources: {cpus: 1}\n  run: echo ok\n";

std::vector<Field> fields() {
  const std::string head = "project: p\ntrain:\n  resources: {cpus: 1}\n";
  return {
      {"project", "project: \"@V@\"\ntrain:\n  resources: {cpus: 1}\n  run: echo ok\n", "",
       Field::text, none},
      {"train.image", head + "  image: \"@V@\"\n  run: echo ok\n", "", Field::text, image_like},
      {"train.image.name", head + "  image: {name: \"@V@\"}\n  run: echo ok\n", "", Field::text,
       image_like},
      {"train.image.install[0]",
       head + "  image: {name: img, install: [\"@V@\"]}\n  run: echo ok\n", "", Field::command,
       any},
      {"train.install", head + "  install: \"@V@\"\n  run: echo ok\n", "", Field::command, any},
      {"train.run[0]", head + "  run: [\"@V@\"]\n", "", Field::command, any},
      {"train.framework", head + "  framework: \"@V@\"\n  run: echo ok\n", "", Field::text, any},
      {"train.tensorflow.version",
       head + "  framework: tensorflow\n  tensorflow: {version: \"@V@\"}\n  run: echo ok\n", "",
       Field::text, none},
      {"train.parameters.hostile", head + "  parameters: {hostile: \"@V@\"}\n  run: echo ok\n", "",
       Field::text, any},
      {"train.parameters.hostile[0]",
       head + "  parameters: {hostile: [\"@V@\", 1]}\n  run: echo ok\n", "", Field::text, any},
      {"slurm.partition", std::string(kJob) + "slurm: {partition: \"@V@\"}\n", "", Field::text,
       plain_word},
      {"slurm.account", std::string(kJob) + "slurm: {account: \"@V@\"}\n", "", Field::text,
       plain_word},
      {"slurm.qos", std::string(kJob) + "slurm: {qos: \"@V@\"}\n", "", Field::text, plain_word},
      {"slurm.constraint", std::string(kJob) + "slurm: {constraint: \"@V@\"}\n", "", Field::text,
       plain_word},
      {"slurm.dependency", std::string(kJob) + "slurm: {dependency: \"@V@\"}\n", "", Field::text, none},
      {"slurm.reservation", std::string(kJob) + "slurm: {reservation: \"@V@\"}\n", "", Field::text,
       plain_word},
      {"slurm.time", std::string(kJob) + "slurm: {time: \"@V@\"}\n", "", Field::text, none},
      {"slurm.signal", std::string(kJob) + "slurm: {signal: \"@V@\"}\n", "", Field::text, none},
      {"slurm.mail.type", std::string(kJob) + "slurm: {mail: {type: \"@V@\"}}\n", "", Field::text,
       none},
      {"slurm.mail.user", std::string(kJob) + "slurm: {mail: {user: \"@V@\"}}\n", "", Field::text,
       any},
      {"slurm.output", std::string(kJob) + "slurm: {output: \"@V@\"}\n", "", Field::text, any},
      {"slurm.error", std::string(kJob) + "slurm: {error: \"@V@\"}\n", "", Field::text, any},
      {"slurm.modules", std::string(kJob) + "slurm: {modules: [\"@V@\"]}\n", "", Field::text, none},
      {"slurm.environment.HOSTILE",
       std::string(kJob) + "slurm: {environment: {HOSTILE: \"@V@\"}}\n", "", Field::text, any},
      {"slurm.extra[0]", std::string(kJob) + "slurm: {extra: [\"--comment=@V@\"]}\n", "",
       Field::text, any},
      // The site file: the same rules.
      {"output_root", kJob, "output_root: \"@V@\"\n", Field::text, run_time_path},
      {"frameworks.pytorch.default.image", kFrameworkJob,
       "frameworks: {pytorch: {default: {image: \"@V@\"}}}\n", Field::text, image_like},
      {"frameworks.pytorch.default.gpu_image",
       "project: p\ntrain:\n  framework: pytorch\n  resources: {gpus: 1}\n  run: echo ok\n",
       "frameworks: {pytorch: {default: {gpu_image: \"@V@\"}}}\n", Field::text, image_like},
      {"frameworks.pytorch.default.venv", kFrameworkJob,
       "frameworks: {pytorch: {default: {venv: \"@V@\"}}}\n", Field::text, any},
      {"frameworks.pytorch.default.modules", kFrameworkJob,
       "frameworks: {pytorch: {default: {modules: [\"@V@\"]}}}\n", Field::text, none},
      {"frameworks",
       "project: p\ntrain:\n  framework: \"@V@\"\n  resources: {cpus: 1}\n  run: echo ok\n",
       "frameworks: {\"@V@\": {default: {image: img}}}\n", Field::text, any},
      {"frameworks.pytorch", kFrameworkJob,
       "frameworks: {pytorch: {default: {image: img}, \"@V@\": {image: img}}}\n", Field::text, any},
      {"slurm.output", kJob, "defaults: {output: \"@V@\"}\n", Field::text, any},
      {"slurm.partition", kJob, "defaults: {partition: \"@V@\"}\n", Field::text, plain_word},
      {"riseml", kJob, "riseml: \"@V@\"\n", Field::site_command, any},
  };
}

// `raw` as the inside of a YAML double-quoted string.
std::string yaml_escaped(const std::string& raw) {
  std::string out;
  for (unsigned char c : raw) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string filled(std::string text, const std::string& yaml_value) {
  for (size_t at; (at = text.find("@V@")) != std::string::npos;) text.replace(at, 3, yaml_value);
  return text;
}

struct Outcome {
  std::optional<std::string> script;
  std::string messages;            // every diagnostic, formatted
  std::vector<Diagnostic> errors;  // the job's or the site's
};

Outcome translate_field(const Field& f, const std::string& yaml_value) {
  Outcome out;
  SiteConfig site;
  if (!f.site.empty()) {
    Diagnostics site_diags;
    auto parsed = parse_site_config_text(filled(f.site, yaml_value), "site.yml", site_diags);
    out.messages = site_diags.format();
    for (const auto& d : site_diags.all())
      if (d.severity == Severity::error) out.errors.push_back(d);
    if (!parsed) return out;
    site = *parsed;
  }
  Translation t = translate_text(filled(f.job, yaml_value), "riseml.yml", site);
  out.messages += t.diagnostics.format();
  for (const auto& d : t.diagnostics.all())
    if (d.severity == Severity::error) out.errors.push_back(d);
  out.script = t.script;
  return out;
}

// Printed messages hold no control character but their line ends, and are UTF-8.
void expect_printable(const std::string& messages, const std::string& what) {
  EXPECT_EQ(first_non_utf8(messages), std::nullopt) << what << ": " << messages;
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto c = static_cast<unsigned char>(messages[i]);
    const bool c1 =
        c == 0xC2 && i + 1 < messages.size() && static_cast<unsigned char>(messages[i + 1]) <= 0x9F;
    EXPECT_TRUE((c >= 0x20 && c != 0x7f && !c1) || c == '\n')
        << what << ": byte " << int(c) << " at " << i << " in " << messages;
  }
}

// An error at the key (or at an entry of it: 'slurm.modules[0]'), with a file and a line.
bool has_error_at(const Outcome& o, const std::string& key) {
  for (const auto& d : o.errors) {
    const bool at_key = d.key_path == key || d.key_path.rfind(key + "[", 0) == 0;
    if (at_key && d.where.line > 0 && !d.where.file.empty()) return true;
  }
  return false;
}

// ---- control characters -------------------------------------------------------------------

struct ControlCase {
  std::string yaml;     // as written inside the double quotes
  std::string escaped;  // how the message shows it
  bool command_layout;  // a line break or tab: allowed in commands
};

const std::vector<ControlCase> kControls = {
    {"a\\nb", "\\n", true},          {"a\\tb", "\\t", true},
    {"a\\rb", "\\r", false},         {"a\\0b", "\\0", false},
    {"a\\eb", "\\x1b", false},       {"a\\x01b", "\\x01", false},
    {"a\\x7fb", "\\x7f", false},     {"a\\u0085b", "\\u0085", false},
    {"a\\u009bb", "\\u009b", false}, {"a\\Nb", "\\x85", false},
    {"a\\_b", "\\xa0", false},       {"a\\e[2J\\e]0;title\\x07b", "\\x1b", false},
};

TEST(ScriptInjection, ControlCharactersAreRefusedInEveryFieldButCommandLayout) {
  for (const auto& f : fields()) {
    for (const auto& c : kControls) {
      const std::string what = f.key + " = \"" + c.yaml + "\"";
      Outcome o = translate_field(f, c.yaml);
      expect_printable(o.messages, what);
      if (f.kind == Field::command && c.command_layout) {
        EXPECT_TRUE(o.script.has_value()) << what << ": " << o.messages;
        continue;
      }
      EXPECT_FALSE(o.script.has_value()) << what;
      EXPECT_TRUE(has_error_at(o, f.key)) << what << ": " << o.messages;
      EXPECT_NE(o.messages.find(c.escaped), std::string::npos) << what << ": " << o.messages;
    }
  }
}

// ---- values that try to leave their place ---------------------------------------------------

std::vector<std::string> hostile_values(const std::string& target) {
  return {
      "$(touch " + target + ")",
      "`touch " + target + "`",
      "'; touch " + target + " #",
      "\"; touch " + target + "; \"",
      "$(touch${IFS}" + target + ")",
      "x;touch${IFS}" + target,
      "';touch${IFS}" + target + ";'",
      "x;touch",
      "${IFS}$'\\x41'#",
  };
}

TEST(ScriptInjection, HostileValuesAreRefusedOrInert) {
  int translated = 0;
  for (const auto& f : fields()) {
    if (f.kind == Field::site_command) continue;  // it runs, by design
    Sandbox box;
    for (const auto& value : hostile_values(box.target())) {
      const std::string what = f.key + " = " + value;
      Outcome o = translate_field(f, yaml_escaped(value));
      EXPECT_EQ(o.script.has_value(), f.accepts(value)) << what << ": " << o.messages;
      if (!o.script) {
        EXPECT_TRUE(has_error_at(o, f.key)) << what << ": " << o.messages;
        continue;
      }
      ++translated;
      EXPECT_EQ(bash_syntax_errors(*o.script), "") << what << "\n" << *o.script;
      if (f.key.rfind("frameworks.pytorch.default.venv", 0) == 0) {
        // `source VENV/bin/activate` needs the folder; VENV is relative, so inside the box.
        fs::create_directories(box.path() / value / "bin");
        write_file(box.path() / value / "bin" / "activate", "export ACTIVATED=1\n");
      }
      fs::remove_all(box.path() / "records");
      fs::create_directories(box.path() / "records");
      CommandResult r = box.run(*o.script);
      EXPECT_EQ(r.status, 0) << what << "\n" << r.err << "\n" << *o.script;
      EXPECT_FALSE(box.injected()) << what << "\n" << *o.script;
      ASSERT_GE(box.srun_calls(), 1) << what << "\n" << r.err;
      const auto args = box.srun_arguments(box.srun_calls() - 1);
      if (f.kind == Field::command) {
        // A command reaches its step exactly as written; it runs there, by design.
        bool found = false;
        for (int n = 0; n < box.srun_calls(); ++n)
          if (box.srun_arguments(n).back() == value) found = true;
        EXPECT_TRUE(found) << what << "\n" << *o.script;
      } else if (f.key.find("HOSTILE") != std::string::npos ||
                 f.key.rfind("train.parameters.hostile", 0) == 0) {
        // Exported values arrive as written.
        EXPECT_EQ(box.hostile_seen(box.srun_calls() - 1), value) << what << "\n" << *o.script;
      } else {
        EXPECT_EQ(args.back(), "echo ok") << what;
      }
      EXPECT_FALSE(box.injected()) << what;
    }
  }
  EXPECT_GT(translated, 50) << "most fields must translate some hostile value, or the run "
                               "above proves nothing";
}

// A parameter value is put into run lines where its {{placeholder}} is, as part of the
// command, exactly as written (and exported quoted).
TEST(ScriptInjection, PlaceholderValuesBecomePartOfTheCommandAsWritten) {
  Sandbox box;
  const std::string value = "'; touch " + box.target() + " #";
  Translation t = translate_with_defaults(
      "project: p\ntrain:\n  resources: {cpus: 1}\n  parameters: {hostile: [\"" +
          yaml_escaped(value) + "\"]}\n  run: echo {{hostile}}\n",
      "riseml.yml");
  ASSERT_TRUE(t.script.has_value()) << t.diagnostics.format();
  CommandResult r = box.run(*t.script);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(box.injected());
  EXPECT_EQ(box.srun_arguments(0).back(), "echo " + value);
  EXPECT_EQ(box.hostile_seen(0), value);
}

// ---- the reported injection, both image spellings -------------------------------------------

const char* kInjection = "ubuntu\\ntouch /tmp/INJECTED #";

TEST(ScriptInjection, InjectionStringInTheOldImageSpellingIsRefused) {
  Translation t =
      translate_with_defaults(std::string("project: p\ntrain:\n  image: {name: \"") + kInjection +
                                  "\"}\n  resources: {cpus: 1}\n  run: echo hi\n",
                              "riseml.yml");
  EXPECT_FALSE(t.script.has_value());
  EXPECT_EQ(t.diagnostics.format(),
            "riseml.yml:3:10: warning: train.image: image: {name, install} is the old spelling: "
            "write image: NAME\n"
            "riseml.yml:3:17: error: train.image.name: a line break (\\n) after 'ubuntu': this "
            "value must be one line of text without control characters; remove it (in double "
            "quotes, YAML escapes such as \\n, \\e or \\0 write them)\n");
}

TEST(ScriptInjection, InjectionStringInTheImageSpellingIsRefused) {
  Translation t =
      translate_with_defaults(std::string("project: p\ntrain:\n  image: \"") + kInjection +
                                  "\"\n  resources: {cpus: 1}\n  run: echo hi\n",
                              "riseml.yml");
  EXPECT_FALSE(t.script.has_value());
  EXPECT_EQ(t.diagnostics.format(),
            "riseml.yml:3:10: error: train.image: a line break (\\n) after 'ubuntu': this value "
            "must be one line of text without control characters; remove it (in double quotes, "
            "YAML escapes such as \\n, \\e or \\0 write them)\n");
}

TEST(ScriptInjection, NulAndEscInTheImageSpellingAreRefused) {
  for (const auto& [escape, shown] : std::vector<std::pair<std::string, std::string>>{
           {"\\0", "a NUL byte (\\0)"},
           {"\\x00", "a NUL byte (\\0)"},
           {"\\e", "an escape character (\\x1b)"},
           {"\\x1b", "an escape character (\\x1b)"},
           {"\\u001b", "an escape character (\\x1b)"}}) {
    Translation t = translate_with_defaults("project: p\ntrain:\n  image: \"ubuntu" + escape +
                                                "[31m:latest\"\n  resources: {cpus: "
                                                "1}\n  run: echo hi\n",
                                            "riseml.yml");
    EXPECT_FALSE(t.script.has_value()) << escape;
    EXPECT_EQ(t.diagnostics.format(),
              "riseml.yml:3:10: error: train.image: " + shown +
                  " after 'ubuntu': this value must be one line of text without control "
                  "characters; remove it (in double quotes, YAML escapes such as \\n, \\e or \\0 "
                  "write them)\n")
        << escape;
  }
}

// ---- what comes from the command line: the file's name, the site file's path -------------

TEST(ScriptInjection, FileNameAndSitePathCannotEndTheirComment) {
  Sandbox box;
  // No '/': the script names the file by its last component. The script runs in the box.
  const std::string evil = "x\ntouch INJECTED #\r\x1b[2J";
  SiteConfig site = test_site("pyxis-frameworks.yml");
  site.path = evil;
  Translation t = translate_text(
      "project: p\ntrain:\n  framework: tensorflow\n  resources: {cpus: 1}\n  run: echo ok\n",
      evil + ".yml", site);
  ASSERT_TRUE(t.script.has_value()) << t.diagnostics.format();
  const std::string shown = "x\\ntouch INJECTED #\\r\\x1b[2J";
  EXPECT_NE(t.script->find("# Generated by riseml"), std::string::npos);
  EXPECT_NE(t.script->find(" from " + shown + ".yml: edit that file"), std::string::npos)
      << *t.script;
  EXPECT_NE(t.script->find("as the site file " + shown + " provides it"), std::string::npos)
      << *t.script;
  EXPECT_EQ(bash_syntax_errors(*t.script), "");
  CommandResult r = box.run(*t.script);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(box.injected()) << *t.script;
  expect_printable(t.diagnostics.format(), "site path");
}

// ---- commands: what each line becomes -------------------------------------------------------

// A `|` block is one step whose lines bash runs in order; tabs and the lines stay as written.
TEST(ScriptInjection, MultiLineCommandIsOneStepRunningItsLinesInOrder) {
  Sandbox box;
  Translation t = translate_with_defaults(
      "project: p\ntrain:\n  resources: {cpus: 1}\n  run:\n    - |\n      echo one > out\n"
      "      printf '%s\\n' 'two\tcolumns' >> out\n    - \"echo three\\techo >> out\"\n",
      "riseml.yml");
  ASSERT_TRUE(t.script.has_value()) << t.diagnostics.format();
  ASSERT_EQ(srun_lines(*t.script).size(), 2u) << *t.script;
  CommandResult r = box.run(*t.script, /*execute_steps=*/true);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(box.srun_arguments(0).back(), "echo one > out\nprintf '%s\\n' 'two\tcolumns' >> out\n");
  EXPECT_EQ(box.srun_arguments(1).back(), "echo three\techo >> out");
  EXPECT_EQ(read_file(box.path() / "out"), "one\ntwo\tcolumns\nthree echo\n");
}

// As the docs say: a failing line of a block does not stop the block's later lines (no set -e
// inside bash -c), and the step's status is its last line's.
TEST(ScriptInjection, MultiLineCommandRunsPastAFailingLineAsBashDoes) {
  Sandbox box;
  Translation t = translate_with_defaults(
      "project: p\ntrain:\n  resources: {cpus: 1}\n  run:\n    - |\n      false\n"
      "      echo after > out\n    - echo second > out2\n",
      "riseml.yml");
  ASSERT_TRUE(t.script.has_value()) << t.diagnostics.format();
  CommandResult r = box.run(*t.script, /*execute_steps=*/true);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_file(box.path() / "out"), "after\n");
  EXPECT_EQ(read_file(box.path() / "out2"), "second\n");
}

// A riseml.yml saved with Windows line ends translates, and no carriage return reaches a command.
TEST(ScriptInjection, WindowsLineEndsAreLineBreaksNotCarriageReturns) {
  Translation t = translate_with_defaults(
      "project: p\r\ntrain:\r\n  resources: {cpus: 1}\r\n  install: pip install x\r\n"
      "  run: |\r\n    echo a\r\n    echo b\r\nslurm: {partition: gpu}\r\n",
      "riseml.yml");
  ASSERT_TRUE(t.script.has_value()) << t.diagnostics.format();
  EXPECT_EQ(t.script->find('\r'), std::string::npos);
  EXPECT_TRUE(has_line(*t.script, "#SBATCH --partition=gpu"));
}

}  // namespace
}  // namespace riseml::test
