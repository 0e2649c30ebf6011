// horovod.elastic (docs/riseml-yml.md, "Elastic Horovod"): what it means, what the script
// becomes (--nodes=max_workers, --no-kill, one riseml-elastic line instead of srun steps), and
// each mistake named with its line, key and fix.
#include <algorithm>
#include <utility>

#include <gtest/gtest.h>

#include "elastic_driver.hpp"
#include "job_layout.hpp"
#include "test_support.hpp"

namespace riseml::test {
namespace {

using Lines = std::vector<std::string>;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Translation translate(const std::string& train, const SiteConfig& site = SiteConfig{}) {
  return translate_text("project: p\ntrain:\n" + train, "riseml.yml", site);
}

// A job that must translate: its script, checked by bash -n.
std::string script_of(const std::string& train, const SiteConfig& site = SiteConfig{}) {
  Translation t = translate(train, site);
  EXPECT_TRUE(t.script.has_value()) << train << "\n" << t.diagnostics.format();
  if (!t.script) return "";
  EXPECT_EQ(bash_syntax_errors(*t.script), "") << *t.script;
  return *t.script;
}

// A job that must not translate: its diagnostics.
std::string errors_of(const std::string& train) {
  Translation t = translate(train);
  EXPECT_FALSE(t.script.has_value()) << train;
  return t.diagnostics.format();
}

Lines options_with(const std::string& script, const std::string& prefix) {
  Lines out;
  for (const auto& o : sbatch_options(script))
    if (o.rfind(prefix, 0) == 0) out.push_back(o);
  return out;
}

// The line that runs the driver (it starts with its path).
std::string driver_line(const std::string& script, const std::string& driver = "riseml-elastic") {
  auto lines = lines_starting_with(script, driver + " ");
  EXPECT_EQ(lines.size(), 1u) << script;
  return lines.empty() ? "" : lines.front();
}

// The example of docs/riseml-yml.md: 3 workers of 2 processes, down to 2, 4 nodes requested.
const char* kExample = R"(  horovod:
    workers: {count: 3, processes: 2}
    elastic:
      min_workers: 2
      max_workers: 4
  resources: {cpus: 4}
  run: python3 train.py
)";

// ---- what the key means

TEST(ElasticParse, TheMapIsReadAsWritten) {
  Translation t = translate(kExample);
  ASSERT_TRUE(t.job && t.job->train.horovod) << t.diagnostics.format();
  const auto& e = t.job->train.horovod->elastic;
  ASSERT_TRUE(e);
  EXPECT_EQ(e->min_workers, 2);
  EXPECT_EQ(e->max_workers, 4);
  EXPECT_EQ(e->where.line, 6) << "a block mapping starts at its first key";
  EXPECT_EQ(t.job->train.horovod->workers, 3);
}

TEST(ElasticParse, DefaultsAreOneAndTheWorkers) {
  for (const char* elastic : {"{}", "{min_workers: 1}", "{max_workers: 3}", "true"}) {
    Translation t = translate(std::string("  horovod:\n    workers: 3\n    elastic: ") + elastic +
                              "\n  run: python3 train.py\n");
    ASSERT_TRUE(t.job && t.job->train.horovod) << elastic << t.diagnostics.format();
    const auto& e = t.job->train.horovod->elastic;
    ASSERT_TRUE(e) << elastic;
    EXPECT_EQ(e->min_workers, 1) << elastic;
    EXPECT_EQ(e->max_workers, 3) << elastic;
  }
}

TEST(ElasticParse, HorovodKnobsAreReadWhenGiven) {
  Translation t = translate(R"(  horovod:
    workers: 3
    elastic:
      reset_limit: 0
      blacklist_cooldown: [30, 600.5]
      timeout: 1e3
  run: python3 train.py
)");
  ASSERT_TRUE(t.job && t.job->train.horovod) << t.diagnostics.format();
  const auto& e = t.job->train.horovod->elastic;
  ASSERT_TRUE(e);
  EXPECT_EQ(e->reset_limit, 0);
  EXPECT_EQ(e->blacklist_cooldown, std::make_pair(30.0, 600.5));
  EXPECT_EQ(e->timeout, 1000.0);
  for (const char* elastic : {"true", "{min_workers: 2}"}) {
    t = translate(std::string("  horovod:\n    workers: 3\n    elastic: ") + elastic +
                  "\n  run: python3 train.py\n");
    ASSERT_TRUE(t.job && t.job->train.horovod && t.job->train.horovod->elastic) << elastic;
    EXPECT_FALSE(t.job->train.horovod->elastic->reset_limit) << elastic;
    EXPECT_FALSE(t.job->train.horovod->elastic->blacklist_cooldown) << elastic;
    EXPECT_FALSE(t.job->train.horovod->elastic->timeout) << elastic;
  }
}

TEST(ElasticParse, FalseAndAbsentAreNotElastic) {
  for (const char* body : {"  horovod: {workers: 2, elastic: false}\n  run: x\n",
                           "  horovod: {workers: 2}\n  run: x\n"}) {
    const std::string script = script_of(body);
    EXPECT_EQ(options_with(script, "--nodes="), Lines{"--nodes=2"}) << body;
    EXPECT_TRUE(options_with(script, "--no-kill").empty()) << body;
    EXPECT_FALSE(contains(script, "riseml-elastic")) << body;
    EXPECT_FALSE(contains(script, "RISEML_ELASTIC")) << body;
    EXPECT_EQ(srun_lines(script).size(), 1u) << "one srun step per run line: " << script;
  }
}

TEST(ElasticParse, Yaml11BooleansAreReadWithAWarning) {
  Translation t = translate("  horovod: {workers: 2, elastic: yes}\n  run: x\n");
  ASSERT_TRUE(t.script) << t.diagnostics.format();
  EXPECT_TRUE(t.job->train.horovod->elastic);
  EXPECT_TRUE(contains(t.diagnostics.format(),
                       "warning: train.horovod.elastic: 'yes' is a boolean only in YAML 1.1"))
      << t.diagnostics.format();
}

TEST(ElasticParse, TensorflowHorovodAndItsOldSpellingTakeItToo) {
  for (const char* body : {"  tensorflow:\n    horovod: {workers: 2, elastic: true}\n  run: x\n",
                           "  tensorflow:\n    distributed:\n      horovod: {workers: 2, elastic: "
                           "true}\n  run: x\n"}) {
    Translation t = translate(body);
    ASSERT_TRUE(t.script) << body << t.diagnostics.format();
    EXPECT_TRUE(t.job->train.horovod->elastic) << body;
    EXPECT_TRUE(contains(*t.script, "riseml-elastic --workers 2 --min-workers 1 ")) << *t.script;
  }
}

// ---- the layout

TEST(ElasticLayout, NodesAreMaxWorkersAndTheDriverStartsTheWorkers) {
  Translation t = translate(kExample);
  ASSERT_TRUE(t.job);
  Diagnostics diags;
  auto layout = plan_layout(*t.job, SiteConfig{}, diags);
  ASSERT_TRUE(layout) << diags.format();
  ASSERT_TRUE(layout->elastic);
  EXPECT_EQ(layout->kind, JobKind::horovod);
  EXPECT_EQ(layout->groups.front().nodes, 4);
  EXPECT_EQ(layout->groups.front().ntasks_per_node, 2);
  EXPECT_EQ(layout->groups.front().ntasks, 6) << "the tasks started: workers x processes";
  EXPECT_EQ(layout->elastic->workers, 3);
  EXPECT_EQ(layout->elastic->min_workers, 2);
  EXPECT_EQ(layout->elastic->max_workers, 4);
  EXPECT_EQ(layout->elastic->driver, "riseml-elastic");
}

// ---- the script

TEST(ElasticScript, NodesNoKillAndTheirComment) {
  const std::string script = script_of(kExample);
  EXPECT_EQ(options_with(script, "--nodes="), Lines{"--nodes=4"}) << script;
  EXPECT_EQ(options_with(script, "--no-kill"), Lines{"--no-kill"});
  EXPECT_EQ(options_with(script, "--ntasks-per-node="), Lines{"--ntasks-per-node=2"});
  EXPECT_EQ(options_with(script, "--cpus-per-task="), Lines{"--cpus-per-task=2"});
  EXPECT_TRUE(has_line(script,
                       "# Elastic: --nodes is max_workers (3 workers + 1 spare); --no-kill "
                       "keeps the allocation when a node fails: the job goes on while 2 "
                       "node(s) remain."))
      << script;
  EXPECT_TRUE(contains(script,
                       "# Note: max_workers 4: 1 spare node(s) requested up front wait "
                       "idle; riseml-elastic starts one when a node leaves."))
      << script;
  EXPECT_TRUE(contains(script,
                       "# Project p: elastic Horovod data-parallel, 3 node(s) x 2 "
                       "process(es), going on with at least 2 node(s), 4 requested."))
      << script;
}

TEST(ElasticScript, NoSpareNoSpareNote) {
  const std::string script = script_of("  horovod: {workers: 3, elastic: true}\n  run: x\n");
  EXPECT_EQ(options_with(script, "--nodes="), Lines{"--nodes=3"});
  EXPECT_FALSE(contains(script, "spare node(s) requested")) << script;
}

TEST(ElasticScript, RunLinesBecomeOneTaskScriptForTheDriver) {
  const std::string script = script_of(R"yml(  horovod:
    workers: {count: 3, processes: 2}
    elastic: {min_workers: 2, max_workers: 4}
  resources: {cpus: 4}
  run:
    - python3 prepare.py
    - python3 -c "print('hi')"
)yml");
  EXPECT_TRUE(srun_lines(script).empty()) << "the driver starts the steps: " << script;
  EXPECT_EQ(lines_starting_with(script, "riseml_task_script"),
            (Lines{"riseml_task_script='set -e'", "riseml_task_script+=$'\\n''python3 prepare.py'",
                   "riseml_task_script+=$'\\n''python3 -c \"print('\\''hi'\\'')\"'"}));
  EXPECT_EQ(driver_line(script),
            "riseml-elastic --workers 3 --min-workers 2 --tasks-per-node 2 "
            "--srun-arg=--cpus-per-task=2 --srun-arg=--riseml-bind=auto -- bash -c "
            "\"${riseml_task_script}\"");
  const size_t exported = script.find("\nexport RISEML_ELASTIC=1\n");
  ASSERT_NE(exported, std::string::npos) << script;
  EXPECT_LT(exported, script.find("\nriseml-elastic ")) << "exported before the driver runs";
}

TEST(ElasticScript, HorovodKnobsBecomeDriverOptionsOnlyWhenGiven) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{reset_limit: 3, blacklist_cooldown: [30, 600.5], timeout: .5e1}",
       " --tasks-per-node 1 --reset-limit 3 --blacklist-cooldown-range 30 600.5 "
       "--elastic-timeout 5 --srun-arg="},
      {"{reset_limit: 0}", " --tasks-per-node 1 --reset-limit 0 --srun-arg="},
      {"{blacklist_cooldown: [60, 60]}",
       " --tasks-per-node 1 --blacklist-cooldown-range 60 60 --srun-arg="},
      {"{timeout: 0}", " --tasks-per-node 1 --elastic-timeout 0 --srun-arg="},
      {"{timeout: -0.0}", " --tasks-per-node 1 --elastic-timeout 0 --srun-arg="},
      {"{blacklist_cooldown: [0.25, 86400], timeout: 604800}",
       " --tasks-per-node 1 --blacklist-cooldown-range 0.25 86400 --elastic-timeout 604800 "
       "--srun-arg="},
      {"{min_workers: 2}", " --tasks-per-node 1 --srun-arg="},
  };
  for (const auto& [elastic, says] : cases) {
    const std::string line = driver_line(
        script_of("  horovod:\n    workers: 3\n    elastic: " + elastic + "\n  run: x\n"));
    EXPECT_TRUE(contains(line, says)) << elastic << "\n" << line;
  }
}

TEST(ElasticScript, InstallStepsStaySrunOnEveryNode) {
  const std::string script = script_of(
      "  horovod: {workers: 2, elastic: {max_workers: 3}}\n  install: pip install x\n"
      "  run: python3 train.py\n");
  EXPECT_EQ(srun_lines(script),
            Lines{"srun --nodes=\"${SLURM_JOB_NUM_NODES}\" --ntasks=\"${SLURM_JOB_NUM_NODES}\" "
                  "--ntasks-per-node=1 --kill-on-bad-exit=1 bash -c 'pip install x'"});
  EXPECT_LT(script.find("\nsrun "), script.find("\nriseml-elastic ")) << "install first";
}

TEST(ElasticScript, ContainerOptionsAreOneSrunArgEach) {
  const std::string script =
      script_of("  image: gcr.io/x/y:t\n  horovod: {workers: 2, elastic: true}\n  run: x\n");
  EXPECT_EQ(
      driver_line(script),
      "riseml-elastic --workers 2 --min-workers 1 --tasks-per-node 1 "
      "--srun-arg=--cpus-per-task=1 --srun-arg=--riseml-bind=auto "
      "--srun-arg=--container-image='gcr.io#x/y:t' --srun-arg=--container-name=riseml "
      "--srun-arg=--container-mounts=\"${SLURM_SUBMIT_DIR},${OUTPUT_DIR},${OUTPUT_DIR}:/output\" "
      "--srun-arg=--container-workdir=\"${SLURM_SUBMIT_DIR}\" -- bash -c "
      "\"${riseml_task_script}\"");
}

TEST(ElasticScript, SiteBindOffLeavesOutTheBindArgument) {
  SiteConfig site;
  site.bind = "off";
  std::string script = script_of("  horovod: {workers: 2, elastic: true}\n  run: x\n", site);
  EXPECT_FALSE(contains(driver_line(script), "--riseml-bind")) << script;
  site.bind = "verbose";
  script = script_of("  horovod: {workers: 2, elastic: true}\n  run: x\n", site);
  EXPECT_TRUE(contains(driver_line(script), " --srun-arg=--riseml-bind=verbose ")) << script;
}

TEST(ElasticScript, WithParametersEachArrayTaskRunsItsLines) {
  const std::string script = script_of(R"(  horovod: {workers: 2, elastic: true}
  parameters:
    lr: [0.1, 0.2]
  run: python3 train.py --lr {{lr}}
)");
  EXPECT_EQ(options_with(script, "--array="), Lines{"--array=0-1"});
  EXPECT_TRUE(has_line(script, "    RISEML_RUN_1='python3 train.py --lr 0.2'")) << script;
  EXPECT_TRUE(has_line(script, "riseml_task_script+=$'\\n'\"${RISEML_RUN_1}\"")) << script;
  EXPECT_TRUE(contains(driver_line(script), " -- bash -c \"${riseml_task_script}\""));
}

// ---- where riseml-elastic is

TEST(ElasticDriver, BesideTheSitesRiseml) {
  EXPECT_EQ(elastic_driver_beside("riseml"), "riseml-elastic");
  EXPECT_EQ(elastic_driver_beside("/usr/bin/riseml"), "/usr/bin/riseml-elastic");
  EXPECT_EQ(elastic_driver_beside("/opt/riseml-1.0/bin/riseml"),
            "/opt/riseml-1.0/bin/riseml-elastic");
  EXPECT_EQ(elastic_driver_beside("$HOME/bin/riseml"), "$HOME/bin/riseml-elastic");
  EXPECT_EQ(elastic_driver_beside("/opt/bin/riseml-wrapper"), std::nullopt);
  EXPECT_EQ(elastic_driver_beside("apptainer exec /img.sif riseml"), std::nullopt);
  EXPECT_EQ(elastic_driver_command("apptainer exec /img.sif riseml"), "riseml-elastic");
}

TEST(ElasticDriver, TheScriptUsesTheSitesPath) {
  SiteConfig site;
  site.riseml_command = "/usr/bin/riseml";
  std::string script = script_of("  horovod: {workers: 2, elastic: true}\n  run: x\n", site);
  EXPECT_TRUE(driver_line(script, "/usr/bin/riseml-elastic")
                  .starts_with("/usr/bin/riseml-elastic --workers 2 "))
      << script;
  site.riseml_command = "/opt/wrap --quiet";
  script = script_of("  horovod: {workers: 2, elastic: true}\n  run: x\n", site);
  EXPECT_FALSE(driver_line(script).empty());
  EXPECT_TRUE(contains(script,
                       "# Note: the site's riseml: (/opt/wrap --quiet) is not a path to "
                       "riseml, so riseml-elastic is taken from PATH."))
      << script;
}

// ---- the script when it runs, with riseml-elastic and srun stubbed

class StubbedJob {
 public:
  StubbedJob() {
    fs::create_directories(dir_ / "bin");
    // Records its arguments (NUL-separated) and RISEML_ELASTIC, then runs what follows `--`.
    stub("riseml-elastic", R"(printf '%s\0' "$@" > "$RISEML_TEST_DIR/driver.args"
printf '%s' "${RISEML_ELASTIC-unset}" > "$RISEML_TEST_DIR/driver.env"
while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done
shift
exec "$@")");
    stub("srun", "exit 0");
  }

  CommandResult run(const std::string& script) {
    write_file(dir_ / "job.sbatch", script);
    const std::string d = dir_.path().string();
    return run_command({"env", "-i", "PATH=" + d + "/bin:/usr/bin:/bin", "HOME=" + d,
                        "SLURM_JOB_ID=42", "SLURM_JOB_NUM_NODES=4", "SLURM_SUBMIT_DIR=" + d,
                        "RISEML_TEST_DIR=" + d, "bash", d + "/job.sbatch"},
                       dir_.path());
  }

  Lines driver_args() const {
    const std::string raw = read_file(dir_ / "driver.args");
    Lines args;
    for (size_t begin = 0, end; (end = raw.find('\0', begin)) != std::string::npos; begin = end + 1)
      args.push_back(raw.substr(begin, end - begin));
    return args;
  }
  std::string driver_env() const { return read_file(dir_ / "driver.env"); }
  fs::path operator/(const std::string& name) const { return dir_ / name; }
  std::string dir() const { return dir_.path().string(); }

 private:
  void stub(const std::string& name, const std::string& body) {
    const fs::path p = dir_ / "bin" / name;
    write_file(p, "#!/bin/bash\n" + body + "\n");
    fs::permissions(p, fs::perms::owner_all);
  }
  TempDir dir_;
};

TEST(ElasticRun, TheDriverGetsEachArgumentAsOneWord) {
  StubbedJob job;
  write_file(job / "train.py", "");
  const std::string script = script_of(std::string(kExample) + "  image: gcr.io/x/y:t\n");
  CommandResult r = job.run(script);
  EXPECT_EQ(r.status, 0) << r.err;
  const std::string d = job.dir();
  const std::string out = d + "/riseml-output/p/42";
  EXPECT_EQ(
      job.driver_args(),
      (Lines{"--workers", "3", "--min-workers", "2", "--tasks-per-node", "2",
             "--srun-arg=--cpus-per-task=2", "--srun-arg=--riseml-bind=auto",
             "--srun-arg=--container-image=gcr.io#x/y:t", "--srun-arg=--container-name=riseml",
             "--srun-arg=--container-mounts=" + d + "," + out + "," + out + ":/output",
             "--srun-arg=--container-workdir=" + d, "--", "bash", "-c",
             "set -e\npython3 train.py"}));
  EXPECT_EQ(job.driver_env(), "1");
}

TEST(ElasticRun, TheKnobsReachTheDriverAsSeparateWords) {
  StubbedJob job;
  const std::string script = script_of(
      "  horovod:\n    workers: 2\n    elastic: {reset_limit: 5, blacklist_cooldown: [10, "
      "120], timeout: 30.5}\n  run: 'true'\n");
  CommandResult r = job.run(script);
  EXPECT_EQ(r.status, 0) << r.err;
  const Lines args = job.driver_args();
  // Each option and its values are separate words.
  const Lines knobs = {"--reset-limit", "5", "--blacklist-cooldown-range", "10", "120"};
  const Lines timeout = {"--elastic-timeout", "30.5"};
  EXPECT_NE(std::search(args.begin(), args.end(), knobs.begin(), knobs.end()), args.end())
      << script;
  EXPECT_NE(std::search(args.begin(), args.end(), timeout.begin(), timeout.end()), args.end())
      << script;
}

TEST(ElasticRun, TheTaskScriptStopsAtTheFirstFailure) {
  StubbedJob job;
  const std::string marker = (job / "AFTER").string();
  const std::string script = script_of(
      "  horovod: {workers: 2, elastic: true}\n  run:\n"
      "    - touch " +
      (job / "BEFORE").string() + "\n    - 'false'\n    - touch " + marker + "\n");
  CommandResult r = job.run(script);
  EXPECT_NE(r.status, 0) << "the driver's status is the job's";
  EXPECT_TRUE(fs::exists(job / "BEFORE"));
  EXPECT_FALSE(fs::exists(marker)) << "set -e: the lines after a failure do not run";
}

// ---- mistakes: each names the line, the key and the fix

TEST(ElasticErrors, EachNamesItsLineKeyAndFix) {
  struct Case {
    std::string elastic;  // the text after "elastic: " on line 5
    std::string says;     // the whole message after the location
  };
  const std::vector<Case> cases = {
      {"{min_workers: 1.5}",
       "5:28: error: train.horovod.elastic.min_workers: must be a whole number, got '1.5' (a whole "
       "number is needed); write e.g. min_workers: 2"},
      {"{min_workers: '2'}",
       "5:28: error: train.horovod.elastic.min_workers: must be a whole number, got '2' (a quoted "
       "number is text: remove the quotes); write e.g. min_workers: 2"},
      {"{max_workers: four}",
       "5:28: error: train.horovod.elastic.max_workers: must be a whole number, got 'four'; write "
       "e.g. max_workers: 4"},
      {"{min_workers: 0}",
       "5:28: error: train.horovod.elastic.min_workers: must be at least 1, got 0; write e.g. "
       "min_workers: 2"},
      {"{min_workers: 4}",
       "5:28: error: train.horovod.elastic.min_workers: is 4, more than the 3 worker node(s) the "
       "job starts with, so it would end at once: write min_workers: 3 or less (or raise workers)"},
      {"{max_workers: 2}",
       "5:28: error: train.horovod.elastic.max_workers: is 2, fewer than the 3 worker node(s) "
       "started: max_workers counts the nodes requested, the workers plus spares; write "
       "max_workers: 3 or more (or lower workers)"},
      {"{max_workers: 1025}",
       "5:28: error: train.horovod.elastic.max_workers: is 1025; an elastic job requests at most "
       "1024 nodes: write max_workers: 1024 or less"},
      {"{min_worker: 2}",
       "5:15: error: train.horovod.elastic.min_worker: unknown key (did you mean 'min_workers'?); "
       "'train.horovod.elastic' keys are: min_workers, max_workers, reset_limit, "
       "blacklist_cooldown, timeout"},
      {"{reset_limit: -1}",
       "5:28: error: train.horovod.elastic.reset_limit: must be at least 0, got -1; write e.g. "
       "reset_limit: 3"},
      {"{reset_limit: 2.5}",
       "5:28: error: train.horovod.elastic.reset_limit: must be a whole number, got '2.5' (a "
       "whole number is needed); write e.g. reset_limit: 3"},
      {"{reset_limit: 1000001}",
       "5:28: error: train.horovod.elastic.reset_limit: is 1000001, more than 1000000: write "
       "reset_limit: 1000000 or less (or leave it out: no limit)"},
      {"{reset_limit: 99999999999999999999}",
       "5:28: error: train.horovod.elastic.reset_limit: the number '99999999999999999999' is too "
       "large; write e.g. reset_limit: 3"},
      {"{blacklist_cooldown: 60}",
       "5:35: error: train.horovod.elastic.blacklist_cooldown: must be a list of two numbers of "
       "seconds, [low, high], got '60'; write e.g. blacklist_cooldown: [60, 600]"},
      {"{blacklist_cooldown: [60, 600, 6000]}",
       "5:35: error: train.horovod.elastic.blacklist_cooldown: must be a list of two numbers of "
       "seconds, [low, high], got 3 value(s); write e.g. blacklist_cooldown: [60, 600]"},
      {"{blacklist_cooldown: {low: 60, high: 600}}",
       "5:35: error: train.horovod.elastic.blacklist_cooldown: must be a list of two numbers of "
       "seconds, [low, high], got a mapping; write e.g. blacklist_cooldown: [60, 600]"},
      {"{blacklist_cooldown: [0, 600]}",
       "5:36: error: train.horovod.elastic.blacklist_cooldown[0]: must be greater than 0, got 0; "
       "write e.g. blacklist_cooldown: [60, 600]"},
      {"{blacklist_cooldown: [60, '600']}",
       "5:40: error: train.horovod.elastic.blacklist_cooldown[1]: must be a number, got '600' (a "
       "quoted number is text: remove the quotes); write e.g. blacklist_cooldown: [60, 600]"},
      {"{blacklist_cooldown: [60, 1e5]}",
       "5:40: error: train.horovod.elastic.blacklist_cooldown[1]: is 1e5 seconds, more than a "
       "day (86400): write 86400 or less, e.g. blacklist_cooldown: [60, 600]"},
      {"{blacklist_cooldown: [600, 60]}",
       "5:35: error: train.horovod.elastic.blacklist_cooldown: low 600 is more than high 60: "
       "write the shorter cooldown first, e.g. blacklist_cooldown: [60, 600]"},
      {"{timeout: -1}",
       "5:24: error: train.horovod.elastic.timeout: must be at least 0, got -1; write e.g. "
       "timeout: 600 (seconds)"},
      {"{timeout: 10m}",
       "5:24: error: train.horovod.elastic.timeout: must be a number, got '10m'; write e.g. "
       "timeout: 600 (seconds)"},
      {"{timeout: 604801}",
       "5:24: error: train.horovod.elastic.timeout: is 604801 seconds, more than a week (604800): "
       "write timeout: 604800 or less"},
      {"{timeout: 1e999}",
       "5:24: error: train.horovod.elastic.timeout: the number '1e999' is out of range; write e.g. "
       "timeout: 600 (seconds)"},
      {"2",
       "5:14: error: train.horovod.elastic: must be true or a mapping of min_workers and "
       "max_workers, got '2'; write e.g. elastic: true or elastic: {min_workers: 2, max_workers: "
       "4}"},
      {"",
       "5:5: error: train.horovod.elastic: must be true or a mapping of min_workers and "
       "max_workers, got nothing; write e.g. elastic: true or elastic: {min_workers: 2, "
       "max_workers: 4}"},
  };
  for (const auto& c : cases) {
    const std::string errors = errors_of("  horovod:\n    workers: 3\n    elastic: " + c.elastic +
                                         "\n  run: python3 train.py\n");
    EXPECT_TRUE(contains(errors, "riseml.yml:" + c.says + "\n")) << c.elastic << "\n" << errors;
  }
}

TEST(ElasticErrors, BothBoundsWrongAreBothReported) {
  const std::string errors = errors_of(R"(  horovod:
    workers: 3
    elastic:
      min_workers: 5
      max_workers: 1
  run: python3 train.py
)");
  EXPECT_TRUE(contains(errors, "riseml.yml:6:20: error: train.horovod.elastic.min_workers: is 5"))
      << errors;
  EXPECT_TRUE(contains(errors, "riseml.yml:7:20: error: train.horovod.elastic.max_workers: is 1"))
      << errors;
}

TEST(ElasticErrors, EveryBadKnobIsReportedInOnePass) {
  const std::string errors = errors_of(R"(  horovod:
    workers: 3
    elastic:
      reset_limit: x
      blacklist_cooldown: [.nan, [1]]
      timeout: '5'
  run: python3 train.py
)");
  for (const char* says :
       {"riseml.yml:6:20: error: train.horovod.elastic.reset_limit: must be a whole number",
        "riseml.yml:7:28: error: train.horovod.elastic.blacklist_cooldown[0]: must be a number, "
        "got '.nan'",
        "riseml.yml:7:34: error: train.horovod.elastic.blacklist_cooldown[1]: must be a number, "
        "got a list",
        "riseml.yml:8:16: error: train.horovod.elastic.timeout: must be a number, got '5' (a "
        "quoted number is text: remove the quotes)"})
    EXPECT_TRUE(contains(errors, says)) << says << "\n" << errors;
}

TEST(ElasticErrors, ABadWorkersCountAndABadElasticAreBothReported) {
  const std::string errors =
      errors_of("  horovod: {workers: 0, elastic: {min_workers: x}}\n  run: python3 train.py\n");
  EXPECT_TRUE(contains(errors, "error: train.horovod.workers: must be at least 1")) << errors;
  EXPECT_TRUE(contains(errors, "error: train.horovod.elastic.min_workers: must be a whole number"))
      << errors;
}

TEST(ElasticErrors, TooManyWorkersForTheDefaultMaximum) {
  const std::string errors =
      errors_of("  horovod: {workers: 2000, elastic: true}\n  run: python3 train.py\n");
  EXPECT_TRUE(contains(errors,
                       "riseml.yml:3:37: error: train.horovod.elastic.max_workers: "
                       "defaults to workers (2000), more than the 1024 nodes an elastic "
                       "job may request: lower workers to 1024 or less"))
      << errors;
}

// ---- layouts that cannot be elastic

TEST(ElasticRefused, TorchDistributedAndParameterServersNeedHorovod) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"  torch_distributed: {workers: 2, elastic: true}\n",
       "riseml.yml:3:44: error: train.torch_distributed.elastic: elastic needs horovod: "
       "torch.distributed workers cannot lose a node and go on; write horovod: {workers: N, "
       "elastic: true} instead, or remove elastic"},
      {"  tensorflow:\n    distributed:\n      ps: 1\n      worker: 2\n      elastic: true\n",
       "riseml.yml:7:16: error: train.tensorflow.distributed.elastic: elastic needs horovod: "
       "parameter-server TensorFlow cannot lose a node and go on; write horovod: {workers: N, "
       "elastic: true} instead, or remove elastic"},
      {"  tensorflow:\n    distributed: {type: horovod, workers: 2, elastic: true}\n",
       "riseml.yml:4:55: error: train.tensorflow.distributed.elastic: elastic is read under "
       "horovod: only: write horovod: {workers: N, elastic: ...} under tensorflow instead of "
       "distributed: {type: horovod}"},
      {"  tensorflow:\n    horovod: {workers: 2, elastic: true}\n    distributed: {ps: 1, "
       "worker: 2}\n",
       "error: train.tensorflow.distributed: Horovod and parameter-server TensorFlow cannot be "
       "combined"},
  };
  for (const auto& [body, says] : cases) {
    const std::string errors = errors_of(body + "  run: python3 train.py\n");
    EXPECT_TRUE(contains(errors, says)) << body << "\n" << errors;
  }
}

}  // namespace
}  // namespace riseml::test
