// The per-section readers behind parse_job_text; each reports into the reader's diagnostics.
#pragma once

#include <yaml-cpp/yaml.h>

#include "job_model.hpp"
#include "yaml_reader.hpp"

namespace riseml {

void parse_train_section(YamlReader& r, const YAML::Node& node, TrainSection& train);
void parse_tensorflow_section(YamlReader& r, const YAML::Node& node, TrainSection& train);
// train.torch_distributed: {workers: C | {count, processes}, backend: riseml | gloo | nccl}.
void parse_torch_distributed(YamlReader& r, const YAML::Node& node, TrainSection& train);
std::optional<HorovodSpec> parse_horovod(YamlReader& r, const YAML::Node& node,
                                         const std::string& path);
// horovod.elastic (`key: node`): true, false or {min_workers, max_workers, reset_limit,
// blacklist_cooldown, timeout}, the first two checked against `workers` (nullopt when the
// workers count was wrong: the value is still checked, then false).
// Sets `out` when elastic; false after reporting errors.
bool parse_elastic(YamlReader& r, const YAML::Node& key, const YAML::Node& node,
                   const std::string& path, std::optional<long long> workers,
                   std::optional<ElasticSpec>& out);
// `elastic` where the layout (`layout`, e.g. "parameter-server TensorFlow") cannot be elastic.
void refuse_elastic(YamlReader& r, const YAML::Node& node, const std::string& path,
                    const std::string& layout);
std::optional<Resources> parse_resources(YamlReader& r, const YAML::Node& node,
                                         const std::string& path);
void parse_parameters(YamlReader& r, const YAML::Node& node, const std::string& path,
                      TrainSection& train);
void parse_slurm_section(YamlReader& r, const YAML::Node& node, SlurmSection& slurm);
// Environment module names (slurm.modules, a site framework's modules): words that are safe
// unquoted on a `module load` line; each bad one is reported and left out.
std::vector<std::string> parse_module_list(YamlReader& r, const YAML::Node& node,
                                           const std::string& path);

// Checks that every {{placeholder}} in run and install names a declared parameter.
void check_placeholders(YamlReader& r, const TrainSection& train);

}  // namespace riseml
