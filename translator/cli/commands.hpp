// The `riseml` subcommands; each returns the process exit status.
#pragma once

#include <string>

namespace riseml::cli {

// Exit statuses: 0 ok, 2 the user's input is wrong (nothing written), 1 anything else.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

int translate(const std::string& file, const std::string& output, const std::string& site);
int validate(const std::string& file, const std::string& site);
int submit(const std::string& file, const std::string& site, const std::string& sbatch,
           bool dry_run, bool follow);
int run_local(const std::string& file, const std::string& site, long long processes,
              long long index);
// riseml estimate (issue 16): predicted step time and scaling efficiency (docs/model.md).
struct EstimateOptions {
  std::string file = "riseml.yml";  // the job (its nodes and GPUs), unless nodes > 0
  std::string site;                 // needs a network: section
  std::string network;              // a site file whose network: section wins (riseml-bench --fit)
  std::string workload;             // a model name or a workload file
  std::string settings = "riseml";  // riseml or horovod (Horovod 2017's defaults)
  std::string fusion;               // bytes, or "64MiB"; empty: the settings' default
  std::string algorithm;            // auto, ring, hd, hierarchical; empty: the settings' default
  double cycle_ms = -1;             // <0: the settings' default
  bool fp16 = false;
  int nodes = 0, gpus_per_node = 0; // override the job's shape / the site's GPUs a node
  double compute_scale = 1.0;
  double overlap_slowdown = -1;     // <0: the site's network.overlap_slowdown
  std::string plot;                 // PNG of efficiency against GPUs
  bool schedule = false;            // also print every collective of the job's step
};
int estimate(const EstimateOptions& options);
int tf_config(const std::string& role, long long index, const std::string& roles,
              const std::string& dir, double timeout_s);

// The job verbs (issue 15): ID is what riseml submit printed, or ID.K for experiment K of a
// sweep. A bad ID, no such job, a job riseml did not submit or another user's job: exit 2.
int status(const std::string& id, bool long_form, bool all_users);
int logs(const std::string& id, bool follow);
int kill_job(const std::string& id);
int monitor(const std::string& id, bool once, double interval_s);
int monitor_probe(const std::string& job_id);

}  // namespace riseml::cli
