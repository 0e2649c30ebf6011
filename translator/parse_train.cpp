// The train section, including the spellings older riseml.yml files used.
#include "image_name.hpp"
#include "section_parsers.hpp"

namespace riseml {

namespace {

const std::vector<std::string> kTrainKeys = {
    "image", "install", "run", "resources", "framework", "tensorflow", "parameters",
    "concurrency", "horovod", "torch_distributed",
    // legacy spellings, accepted with a warning
    "params", "hyperparams", "concurrent-experiments", "kind", "gpus", "inputs"};

void parse_image(YamlReader& r, const YAML::Node& node, TrainSection& train) {
  if (node.IsScalar()) {
    train.image = read_image_name(r, node, "train.image");
    return;
  }
  if (node.IsMap()) {
    // RiseML before 2017-10: image: {name: ..., install: [...]}
    r.check_keys(node, "train.image", {"name", "install"});
    std::string modern = "image: NAME";
    if (auto name = node["name"]) {
      if (auto s = read_image_name(r, name, "train.image.name")) {
        train.image = *s;
        modern = "image: " + *s;
      }
    } else {
      r.error(node, "train.image", "the old form image: {name: ...} needs a name; write image: NAME");
    }
    if (auto install = node["install"]) {
      modern += " and a train-level install: list";
      if (auto lines = r.string_list(install, "train.image.install", ScriptText::commands))
        train.install = *lines;
    }
    r.warning(node, "train.image", "image: {name, install} is the old spelling: write " + modern);
    return;
  }
  r.error(node, "train.image",
          "must be an image name, got " + YamlReader::describe(node) +
              "; write e.g. image: pytorch/pytorch:2.1");
}

// RiseML 0.7 put per-role resources under train.resources: {master, ps, worker}.
bool is_legacy_role_resources(const YAML::Node& node) {
  return node.IsMap() && (node["master"] || node["ps"] || node["worker"]);
}

void parse_legacy_role_resources(YamlReader& r, const YAML::Node& node, TrainSection& train,
                                 std::optional<Resources>& ps, std::optional<Resources>& worker) {
  r.warning(node, "train.resources",
            "per-role resources {master, ps, worker} are the old spelling: write the master's "
            "under train.resources and the others under tensorflow.distributed.ps/worker.resources");
  r.check_keys(node, "train.resources", {"master", "ps", "worker"});
  if (auto m = node["master"]) {
    if (auto res = parse_resources(r, m, "train.resources.master")) train.resources = *res;
  }
  if (auto p = node["ps"]) ps = parse_resources(r, p, "train.resources.ps");
  if (auto w = node["worker"]) worker = parse_resources(r, w, "train.resources.worker");
}

void parse_concurrency(YamlReader& r, const YAML::Node& node, const std::string& path,
                       TrainSection& train) {
  if (auto c = r.integer(node, path, 1, "concurrency: 2")) train.concurrency = *c;
}

}  // namespace

void parse_train_section(YamlReader& r, const YAML::Node& node, TrainSection& train) {
  train.where = r.where(node);
  if (!r.expect_map(node, "train", "train: {run: python train.py}")) return;
  r.check_keys(node, "train", kTrainKeys);

  if (auto image = node["image"]) parse_image(r, image, train);

  if (auto install = node["install"]) {
    if (!train.install.empty()) {
      r.error(install, "train.install",
              "install is given twice (also under image:); keep one list under train.install");
    } else if (auto lines = r.string_list(install, "train.install", ScriptText::commands)) {
      train.install = *lines;
    }
  }

  if (auto run = node["run"]) {
    if (auto lines = r.string_list(run, "train.run", ScriptText::commands)) {
      train.run = *lines;
      if (train.run.empty()) r.error(run, "train.run", "is empty: give at least one command");
      for (const auto& line : train.run) {
        if (line.text.find_first_not_of(" \t\n") == std::string::npos)
          r.diags().error(line.where, "train.run", "a run command is empty: remove it or fill it in");
      }
    }
  } else {
    r.error(node, "train.run", "missing: add the command to run, e.g. run: python train.py");
  }

  std::optional<Resources> legacy_ps, legacy_worker;
  if (auto res = node["resources"]) {
    if (is_legacy_role_resources(res)) {
      parse_legacy_role_resources(r, res, train, legacy_ps, legacy_worker);
    } else if (auto parsed = parse_resources(r, res, "train.resources")) {
      train.resources = *parsed;
    }
  }
  if (!node["resources"] && !node["gpus"]) {
    r.warning(node, "train.resources",
              "not given: each process gets 1 CPU, no GPU and the partition's default memory; "
              "write e.g. resources: {gpus: 1, cpus: 4, mem: 8192}");
  }
  if (auto gpus = node["gpus"]) {
    r.warning(gpus, "train.gpus", "the old spelling: write resources: {gpus: N}");
    if (node["resources"] && node["resources"]["gpus"]) {
      r.error(gpus, "train.gpus", "gpus is given twice (also in resources); keep resources.gpus");
    } else if (auto g = r.integer(gpus, "train.gpus", 0, "gpus: 1")) {
      train.resources.gpus = *g;
    }
  }
  if (auto kind = node["kind"]) {
    r.warning(kind, "train.kind", "the old spelling; it is always a train job: remove it");
  }
  if (auto inputs = node["inputs"]) {
    r.warning(inputs, "train.inputs",
              "ignored: RiseML's data sets do not exist on Slurm; read your data from a path on "
              "the cluster's shared file system");
  }

  if (auto fw = node["framework"]) {
    if (auto s = r.string(fw, "train.framework")) train.framework = *s;
    train.framework_where = r.where(fw);
  }
  if (auto tf = node["tensorflow"]) {
    parse_tensorflow_section(r, tf, train);
  } else if (train.framework == "tensorflow") {
    train.tensorboard = true;  // RiseML's default for TensorFlow jobs
  }
  if (auto h = node["horovod"]) {
    // Our extension for frameworks other than TensorFlow: train.horovod.
    if (train.horovod) {
      r.error(h, "train.horovod", "Horovod is given twice (also under tensorflow:); keep one");
    } else if (train.distributed) {
      r.error(h, "train.horovod",
              "Horovod and parameter-server TensorFlow cannot be combined: keep one");
    } else {
      train.horovod = parse_horovod(r, h, "train.horovod");
    }
  }
  if (auto t = node["torch_distributed"]) {
    if (train.horovod || train.distributed) {
      r.error(t, "train.torch_distributed",
              std::string("torch.distributed workers and ") +
                  (train.horovod ? "Horovod" : "parameter-server TensorFlow") +
                  " cannot be combined: keep one");
    } else {
      parse_torch_distributed(r, t, train);
    }
  }
  if (train.distributed) {
    if (legacy_ps) train.distributed->ps.resources = legacy_ps;
    if (legacy_worker) train.distributed->worker.resources = legacy_worker;
  } else if (legacy_ps || legacy_worker) {
    r.warning(node["resources"], "train.resources",
              "ps/worker resources are ignored: the job is not distributed TensorFlow");
  }

  const YAML::Node parameters = node["parameters"];
  const YAML::Node params = node["params"];
  if (parameters && params) {
    r.error(params, "train.params", "give either 'parameters' or the old 'params', not both");
  } else if (parameters) {
    parse_parameters(r, parameters, "train.parameters", train);
  } else if (params) {
    r.warning(params, "train.params", "the old spelling: write parameters:");
    parse_parameters(r, params, "train.params", train);
  }

  int concurrency_keys = 0;
  if (auto c = node["concurrency"]) {
    parse_concurrency(r, c, "train.concurrency", train);
    ++concurrency_keys;
  }
  if (auto c = node["concurrent-experiments"]) {
    r.warning(c, "train.concurrent-experiments", "the old spelling: write concurrency: N");
    parse_concurrency(r, c, "train.concurrent-experiments", train);
    ++concurrency_keys;
  }
  if (auto h = node["hyperparams"]) {
    r.warning(h, "train.hyperparams",
              "the old spelling: write concurrency: N (max-parallel-experiments)");
    if (r.expect_map(h, "train.hyperparams", "hyperparams: {max-parallel-experiments: 2}")) {
      r.check_keys(h, "train.hyperparams", {"max-parallel-experiments"});
      if (auto m = h["max-parallel-experiments"]) {
        parse_concurrency(r, m, "train.hyperparams.max-parallel-experiments", train);
        ++concurrency_keys;
      }
    }
  }
  if (concurrency_keys > 1) {
    r.error(node, "train.concurrency", "concurrency is given more than once; keep 'concurrency'");
  }
  if (train.concurrency && train.parameters.empty()) {
    r.warning(node["concurrency"] ? node["concurrency"] : node, "train.concurrency",
              "ignored: it limits how many parameter combinations run at once, and there are "
              "no parameters");
  }

  check_placeholders(r, train);
}

}  // namespace riseml
