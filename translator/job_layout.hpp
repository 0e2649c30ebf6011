// How a job's processes map onto Slurm: nodes, tasks, GPUs, CPUs, memory, the array.
// Pure: the sbatch writer only prints what this decides, and tests check each rule here.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "diagnostics.hpp"
#include "job_model.hpp"
#include "site_config.hpp"

namespace riseml {

enum class JobKind { single, horovod, distributed };

// One block of identical tasks: the whole job, or one component of a heterogeneous job.
struct TaskGroup {
  std::string role;                     // "", or master / ps / worker
  long long ntasks = 1;
  std::optional<long long> nodes;       // horovod: the worker count (elastic: max_workers)
  std::optional<long long> ntasks_per_node;
  long long gpus_per_node = 0;          // horovod and single jobs
  long long gpus_per_task = 0;          // distributed roles
  long long cpus_per_task = 1;
  std::optional<long long> mem_per_node_mb;
  std::optional<long long> mem_per_cpu_mb;
};

// Elastic Horovod (horovod.elastic): the group's nodes are max_workers; riseml-elastic starts
// `workers` of them and the job goes on while min_workers nodes remain.
struct ElasticPlan {
  long long workers = 1;
  long long min_workers = 1;
  long long max_workers = 1;
  // reset_limit, blacklist_cooldown and timeout as ElasticSpec: --reset-limit,
  // --blacklist-cooldown-range and --elastic-timeout, each only when given.
  std::optional<long long> reset_limit;
  std::optional<std::pair<double, double>> blacklist_cooldown;
  std::optional<double> timeout;
  std::string driver;  // the riseml-elastic command (elastic_driver.hpp)
};

struct JobLayout {
  JobKind kind = JobKind::single;
  bool heterogeneous = false;  // one component per role (#SBATCH hetjob)
  std::vector<TaskGroup> groups;
  // Distributed roles as (role, count) in launch order, for TF_CONFIG.
  std::vector<std::pair<std::string, long long>> roles;
  size_t array_size = 1;  // parameter combinations; >1 makes a job array
  std::optional<long long> array_throttle;
  std::optional<ElasticPlan> elastic;
  std::vector<std::string> notes;  // why a number is what it is; become script comments
};

std::optional<JobLayout> plan_layout(const JobFile& job, const SiteConfig& site,
                                     Diagnostics& diags);

}  // namespace riseml
