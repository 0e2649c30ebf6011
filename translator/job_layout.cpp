#include "job_layout.hpp"

#include <algorithm>
#include <cmath>

#include "elastic_driver.hpp"
#include "parameter_sweep.hpp"

namespace riseml {

namespace {

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Slurm allocates whole CPUs; RiseML (Kubernetes) allowed fractions.
long long whole_cpus(double cpus, const std::string& who, JobLayout& layout) {
  long long whole = std::max<long long>(1, static_cast<long long>(std::ceil(cpus - 1e-9)));
  if (std::fabs(static_cast<double>(whole) - cpus) > 1e-9) {
    layout.notes.push_back(who + "cpus " + fmt(cpus) + " rounded up to " + std::to_string(whole) +
                           ": Slurm allocates whole CPUs");
  }
  return whole;
}

long long whole_mb(double mb) { return std::max<long long>(1, static_cast<long long>(std::ceil(mb))); }

// A role's own resources replace the train-level ones as a whole, as RiseML's override did
// (a ps that names only cpus and mem has no GPUs).
Resources role_resources(const Resources& base, const std::optional<Resources>& role) {
  return role ? *role : base;
}

TaskGroup distributed_group(const std::string& role, long long count, const Resources& res,
                            JobLayout& layout) {
  TaskGroup g;
  g.role = role;
  g.ntasks = count;
  g.gpus_per_task = res.gpus.value_or(0);
  g.cpus_per_task = whole_cpus(res.cpus.value_or(1), role + ": ", layout);
  if (res.mem_mb) {
    // RiseML's mem is per process; Slurm's per-process knob is memory per CPU.
    g.mem_per_cpu_mb = (whole_mb(*res.mem_mb) + g.cpus_per_task - 1) / g.cpus_per_task;
  }
  return g;
}

// --nodes asks for every node the job may use; the driver starts the workers on some of them.
void plan_elastic(const HorovodSpec& h, const SiteConfig& site, TaskGroup& g, JobLayout& layout) {
  const ElasticSpec& e = *h.elastic;
  g.nodes = e.max_workers;
  layout.elastic = ElasticPlan{.workers = h.workers,
                               .min_workers = e.min_workers,
                               .max_workers = e.max_workers,
                               .reset_limit = e.reset_limit,
                               .blacklist_cooldown = e.blacklist_cooldown,
                               .timeout = e.timeout,
                               .driver = elastic_driver_command(site.riseml_command)};
  if (const long long spares = e.max_workers - h.workers; spares > 0) {
    layout.notes.push_back("max_workers " + std::to_string(e.max_workers) + ": " +
                           std::to_string(spares) + " spare node(s) requested up front wait "
                           "idle; riseml-elastic starts one when a node leaves");
  }
  if (!elastic_driver_beside(site.riseml_command)) {
    layout.notes.push_back("the site's riseml: (" + site.riseml_command +
                           ") is not a path to riseml, so riseml-elastic is taken from PATH");
  }
}

void plan_horovod(const TrainSection& train, const SiteConfig& site, JobLayout& layout,
                  Diagnostics& diags) {
  const HorovodSpec& h = *train.horovod;
  const long long gpus = train.resources.gpus.value_or(0);
  const long long processes = h.processes.value_or(gpus > 0 ? gpus : 1);
  if (gpus > 0 && gpus % processes != 0) {
    diags.error(h.where, "train.tensorflow.horovod.workers.processes",
                std::to_string(processes) + " processes cannot share " + std::to_string(gpus) +
                    " GPUs evenly: make resources.gpus a multiple of processes (e.g. processes: " +
                    std::to_string(gpus) + ")");
    return;
  }
  TaskGroup g;
  g.nodes = h.workers;
  g.ntasks_per_node = processes;
  g.ntasks = h.workers * processes;
  g.gpus_per_node = gpus;
  const double cpus = train.resources.cpus.value_or(static_cast<double>(processes));
  g.cpus_per_task = std::max<long long>(1, static_cast<long long>(std::floor(cpus / processes + 1e-9)));
  if (std::fabs(static_cast<double>(g.cpus_per_task * processes) - cpus) > 1e-9) {
    layout.notes.push_back("cpus " + fmt(cpus) + " per worker over " + std::to_string(processes) +
                           " processes gives " + std::to_string(g.cpus_per_task) +
                           " whole CPU(s) per process");
  }
  if (train.resources.mem_mb) g.mem_per_node_mb = whole_mb(*train.resources.mem_mb);
  if (h.elastic) plan_elastic(h, site, g, layout);
  layout.kind = JobKind::horovod;
  layout.groups.push_back(g);
}

void plan_single(const TrainSection& train, JobLayout& layout) {
  TaskGroup g;
  g.nodes = 1;
  g.ntasks = 1;
  g.gpus_per_node = train.resources.gpus.value_or(0);
  g.cpus_per_task = whole_cpus(train.resources.cpus.value_or(1), "", layout);
  if (train.resources.mem_mb) g.mem_per_node_mb = whole_mb(*train.resources.mem_mb);
  layout.kind = JobKind::single;
  layout.groups.push_back(g);
}

void plan_distributed(const TrainSection& train, JobLayout& layout, Diagnostics& diags) {
  const DistributedSpec& d = *train.distributed;
  layout.kind = JobKind::distributed;
  layout.roles = {{"master", 1}, {"ps", d.ps.count}, {"worker", d.worker.count}};
  std::vector<TaskGroup> groups = {
      distributed_group("master", 1, role_resources(train.resources, d.master), layout),
      distributed_group("ps", d.ps.count, role_resources(train.resources, d.ps.resources), layout),
      distributed_group("worker", d.worker.count, role_resources(train.resources, d.worker.resources),
                        layout)};
  if (layout.array_size <= 1) {
    layout.heterogeneous = true;
    layout.groups = groups;
    return;
  }
  // Slurm has no job arrays of heterogeneous jobs: every task gets the largest role's share.
  TaskGroup all;
  all.role = "all";
  all.ntasks = 0;
  for (const auto& g : groups) {
    all.ntasks += g.ntasks;
    all.gpus_per_task = std::max(all.gpus_per_task, g.gpus_per_task);
    all.cpus_per_task = std::max(all.cpus_per_task, g.cpus_per_task);
    if (g.mem_per_cpu_mb)
      all.mem_per_cpu_mb = std::max(all.mem_per_cpu_mb.value_or(0), *g.mem_per_cpu_mb);
  }
  bool uneven = std::any_of(groups.begin(), groups.end(), [&](const TaskGroup& g) {
    return g.gpus_per_task != all.gpus_per_task || g.cpus_per_task != all.cpus_per_task ||
           g.mem_per_cpu_mb != all.mem_per_cpu_mb;
  });
  if (uneven) {
    std::string memory =
        all.mem_per_cpu_mb ? ", " + std::to_string(*all.mem_per_cpu_mb) + "M per CPU" : "";
    std::string msg =
        "Slurm cannot run a job array of heterogeneous jobs, so every task of this sweep gets "
        "the largest role's resources (" +
        std::to_string(all.gpus_per_task) + " GPU(s), " + std::to_string(all.cpus_per_task) +
        " CPU(s)" + memory + "); give the roles equal resources to waste nothing";
    diags.warning(d.where, "train.tensorflow.distributed", msg);
    layout.notes.push_back(msg);
  }
  layout.groups = {all};
}

}  // namespace

std::optional<JobLayout> plan_layout(const JobFile& job, const SiteConfig& site,
                                     Diagnostics& diags) {
  const TrainSection& train = job.train;
  JobLayout layout;
  const int errors_before = diags.error_count();

  if (!train.parameters.empty()) {
    size_t count = combination_count(train.parameters);
    if (count > site.max_array_size) {
      diags.error(train.parameters.front().where, "train.parameters",
                  "the sweep has " + (count == SIZE_MAX ? std::string("too many") : std::to_string(count)) +
                      " combinations; this cluster runs at most " +
                      std::to_string(site.max_array_size) +
                      " per job array (MaxArraySize): sweep fewer values");
      return std::nullopt;
    }
    layout.array_size = count;
    if (train.concurrency && static_cast<size_t>(*train.concurrency) < count)
      layout.array_throttle = *train.concurrency;
  }

  if (train.horovod) {
    plan_horovod(train, site, layout, diags);
  } else if (train.distributed) {
    plan_distributed(train, layout, diags);
  } else {
    plan_single(train, layout);
  }
  if (!train.resources.mem_mb && !layout.groups.empty()) {
    layout.notes.push_back("no resources.mem: the partition's default memory applies");
  }
  if (diags.error_count() > errors_before) return std::nullopt;
  return layout;
}

}  // namespace riseml
