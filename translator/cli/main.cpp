// riseml: translate RiseML job files into Slurm batch scripts, and submit them.
#include <CLI/CLI.hpp>

#include <iostream>

#include "../printable_text.hpp"
#include "../version.hpp"
#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"riseml: run RiseML job files (riseml.yml) on a Slurm cluster"};
  app.set_version_flag("--version", std::string("riseml ") + riseml::kRisemlVersion);
  app.require_subcommand(1);

  std::string file = "riseml.yml", output, site, sbatch;
  bool dry_run = false;

  auto* translate = app.add_subcommand("translate", "Print the sbatch script for a riseml.yml");
  translate->add_option("file", file, "The job file")->capture_default_str();
  translate->add_option("-o,--output", output, "Write the script here (atomically) instead of stdout");
  translate->add_option("--site", site, "Site file (default /etc/riseml/site.yml if present)");

  auto* validate = app.add_subcommand("validate", "Check a riseml.yml; print every problem");
  validate->add_option("file", file, "The job file")->capture_default_str();
  validate->add_option("--site", site, "Site file (default /etc/riseml/site.yml if present)");

  auto* submit = app.add_subcommand("submit", "Translate a riseml.yml and submit it with sbatch");
  submit->add_option("file", file, "The job file")->capture_default_str();
  submit->add_option("--site", site, "Site file (default /etc/riseml/site.yml if present)");
  submit->add_option("--sbatch", sbatch, "The sbatch program (default $RISEML_SBATCH or sbatch)");
  submit->add_flag("--dry-run", dry_run, "Print the sbatch command and script; submit nothing");
  bool follow = false;
  submit->add_flag("-f,--follow", follow,
                   "Then show state changes and the output until the job ends; exit with its status");

  long long processes = 0, sweep_index = 0;
  bool local = false;
  auto* run = app.add_subcommand("run", "Run a riseml.yml's commands on this machine (riseml-launch)");
  run->add_option("file", file, "The job file")->capture_default_str();
  run->add_flag("--local", local, "Run here, not on Slurm (required: the only mode)")->required();
  run->add_option("-n,--processes", processes, "Processes per run line (default: the job's)");
  run->add_option("--index", sweep_index, "Which parameter combination (default 0)");
  run->add_option("--site", site, "Site file (default /etc/riseml/site.yml if present)");

  std::string role, roles, dir;
  long long index = -1;
  double timeout_s = 600;
  auto* tf = app.add_subcommand(
      "tf-config", "Inside a distributed TensorFlow task: print its TF_CONFIG (used by the script)");
  tf->add_option("--role", role, "master, ps or worker (default $RISEML_TF_ROLE)");
  tf->add_option("--index", index, "Index within the role (default $SLURM_PROCID)");
  tf->add_option("--roles", roles, "e.g. master:1,ps:1,worker:2 (default $RISEML_TF_ROLES)");
  tf->add_option("--dir", dir, "A folder every task shares (default $RISEML_TF_DIR)");
  tf->add_option("--timeout", timeout_s, "Seconds to wait for the other tasks")->capture_default_str();

  riseml::cli::EstimateOptions est;
  auto* estimate = app.add_subcommand(
      "estimate", "Predict a model's step time and scaling efficiency on this cluster (docs/model.md)");
  estimate->add_option("file", est.file, "The job file (its nodes x GPUs)")->capture_default_str();
  estimate->add_option("--site", est.site, "Site file with a network: section (default /etc/riseml/site.yml)");
  estimate->add_option("--network", est.network,
                       "A file with a network: section that replaces the site's (riseml-bench --fit writes one)");
  estimate->add_option("--workload", est.workload,
                       "resnet50, resnet101, inception_v3, vgg16, or a workload file (riseml-replay's format)")
      ->required();
  estimate->add_option("--settings", est.settings, "Engine defaults: riseml, or horovod (Horovod 2017's)")
      ->check(CLI::IsMember({"riseml", "horovod"}))
      ->capture_default_str();
  estimate->add_flag("--fp16", est.fp16, "Gradients sent as float16 (fp16 compression)");
  estimate->add_option("--fusion", est.fusion, "Fusion threshold: bytes, or e.g. 64MiB; 0 turns fusion off");
  estimate->add_option("--cycle-ms", est.cycle_ms, "Engine cycle time in milliseconds")
      ->check(CLI::Range(0.0, 10000.0));
  estimate->add_option("--algorithm", est.algorithm, "auto, ring, hd or hierarchical")
      ->check(CLI::IsMember({"auto", "ring", "hd", "hierarchical"}));
  estimate->add_option("--nodes", est.nodes, "Predict for this many nodes instead of the job's")
      ->check(CLI::Range(1, 1 << 20));
  estimate->add_option("--gpus-per-node", est.gpus_per_node, "Ranks (GPUs) a node instead of the job's")
      ->check(CLI::Range(1, 1024));
  estimate->add_option("--compute-scale", est.compute_scale, "Multiply every compute time (0.5: a GPU twice as fast)")
      ->check(CLI::Range(0.001, 1000.0));
  estimate->add_option("--overlap-slowdown", est.overlap_slowdown,
                       "Share of compute speed lost while a collective runs (0-0.99; default: the site's)")
      ->check(CLI::Range(0.0, 0.99));
  estimate->add_flag("--schedule", est.schedule,
                     "Also print every collective of the step: cycle, gradients, bytes, start, copies, wire, end");
  estimate->add_option("--plot", est.plot, "Also draw efficiency against GPUs into this PNG (python3-matplotlib)");

  // The job verbs: ID is what riseml submit printed, or ID.K for experiment K of a sweep.
  std::string job_id;
  bool long_form = false, all_users = false, once = false;
  double interval_s = 5;
  auto* status = app.add_subcommand("status", "List your riseml jobs (or one job) and their state");
  status->add_option("id", job_id, "A job, or ID.K for one experiment of a sweep");
  status->add_flag("-l,--long", long_form, "One row per experiment of each sweep, with its parameters");
  status->add_flag("-a,--all", all_users, "Every user's riseml jobs, not only yours");

  auto* logs = app.add_subcommand("logs", "Print a job's output, each line prefixed with experiment and rank");
  logs->add_option("id", job_id, "A job, or ID.K for one experiment of a sweep")->required();
  logs->add_flag("-f,--follow", follow, "Follow the output until the job ends; exit with its status");

  auto* kill = app.add_subcommand("kill", "Cancel a job (a whole sweep) or one experiment ID.K");
  kill->add_option("id", job_id, "A job, or ID.K for one experiment of a sweep")->required();

  auto* monitor = app.add_subcommand("monitor", "Live CPU, memory and GPU use per node and rank");
  monitor->add_option("id", job_id, "A job, or ID.K (default: all your running riseml jobs)");
  monitor->add_flag("--once", once, "Print one table and exit");
  monitor->add_option("--interval", interval_s, "Seconds between refreshes")->capture_default_str();

  // Run by monitor on each node of a job (srun --overlap); not for users, so not listed.
  auto* probe = app.add_subcommand("monitor-probe", "");
  probe->group("");
  probe->add_option("--job", job_id, "The job whose tasks to measure")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : riseml::cli::kExitBadInput;
  }
  try {
    if (*translate) return riseml::cli::translate(file, output, site);
    if (*validate) return riseml::cli::validate(file, site);
    if (*submit) return riseml::cli::submit(file, site, sbatch, dry_run, follow);
    if (*status) return riseml::cli::status(job_id, long_form, all_users);
    if (*logs) return riseml::cli::logs(job_id, follow);
    if (*kill) return riseml::cli::kill_job(job_id);
    if (*monitor) return riseml::cli::monitor(job_id, once, interval_s);
    if (*probe) return riseml::cli::monitor_probe(job_id);
    if (*run) return riseml::cli::run_local(file, site, processes, sweep_index);
    if (*estimate) return riseml::cli::estimate(est);
    if (*tf) return riseml::cli::tf_config(role, index, roles, dir, timeout_s);
  } catch (const std::exception& e) {
    std::cerr << "riseml: internal error: " << riseml::printable(e.what()) << '\n';
    return riseml::cli::kExitFailure;
  }
  return riseml::cli::kExitFailure;
}
