// What a riseml.yml means, after parsing and validation: no YAML left in here.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "diagnostics.hpp"
#include "yaml_reader.hpp"

namespace riseml {

// Per-process (per-container in RiseML) resources. Unset values take the translator's defaults.
struct Resources {
  std::optional<long long> gpus;
  std::optional<double> cpus;
  std::optional<double> mem_mb;
  Location where;
};

// horovod.elastic: the job goes on when worker nodes fail, inside one allocation.
// Counts are nodes, as workers are.
struct ElasticSpec {
  long long min_workers = 1;  // fewer nodes left than this: the job ends
  long long max_workers = 1;  // nodes requested up front: the workers started plus spares
  // Horovod's elastic knobs, each passed to riseml-elastic only when given:
  std::optional<long long> reset_limit;  // the world re-formed more often than this: the job ends
  // [low, high] seconds: a host whose worker failed sits out low * 2^failures (within them)
  std::optional<std::pair<double, double>> blacklist_cooldown;
  std::optional<double> timeout;  // seconds below min_workers, waiting for hosts, before it ends
  Location where;
};

// horovod: workers: C, or {count: C, processes: P}; elastic: true or {min_workers, max_workers,
// reset_limit, blacklist_cooldown, timeout}
struct HorovodSpec {
  long long workers = 1;
  std::optional<long long> processes;
  std::optional<ElasticSpec> elastic;
  Location where;
};

// A distributed TensorFlow role: ps or worker.
struct RoleSpec {
  long long count = 1;
  std::optional<Resources> resources;  // else the train-level resources
};

struct DistributedSpec {
  RoleSpec ps;
  RoleSpec worker;
  std::optional<Resources> master;  // the master's own resources, else the train-level ones
  Location where;
};

// One swept parameter: its values as written in the file (so '1e-6' stays '1e-6').
struct Parameter {
  std::string name;
  std::vector<std::string> values;
  Location where;
};

// Our own `slurm:` section: what sbatch needs that RiseML's Kubernetes never asked.
struct SlurmSection {
  std::optional<std::string> partition, account, qos, time, constraint, output, error, signal,
      dependency, mail_type, mail_user, reservation;
  std::optional<bool> exclusive, requeue;
  std::vector<std::string> modules;
  std::vector<std::pair<std::string, std::string>> environment;
  std::vector<std::string> extra_options;  // passed through as #SBATCH lines
};

struct TrainSection {
  std::optional<std::string> image;
  std::vector<SourceText> install;
  std::vector<SourceText> run;
  Resources resources;
  std::optional<std::string> framework;
  Location framework_where;
  std::optional<std::string> framework_version;
  bool tensorboard = false;
  std::optional<HorovodSpec> horovod;
  // torch_distributed: {workers, backend}: the Horovod layout (one PMIx step of workers x
  // processes tasks) for torch.distributed scripts; the backend their init_process_group uses.
  std::optional<std::string> torch_backend;
  std::optional<DistributedSpec> distributed;
  std::vector<Parameter> parameters;
  std::optional<long long> concurrency;
  Location where;
};

struct JobFile {
  std::string path;
  std::string project;
  TrainSection train;
  SlurmSection slurm;
};

}  // namespace riseml
