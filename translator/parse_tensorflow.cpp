// tensorflow: {version, tensorboard, horovod, distributed}, and the legacy forms of each.
#include <regex>

#include "section_parsers.hpp"

namespace riseml {

namespace {
const std::string kSection = "train.tensorflow";
}  // namespace

namespace {

// horovod.workers: C or {count: C, processes: P}, into `spec`; false after reporting errors.
bool parse_workers(YamlReader& r, const YAML::Node& node, const std::string& path,
                   HorovodSpec& spec) {
  const YAML::Node workers = node["workers"];
  const std::string wpath = join_key(path, "workers");
  if (!workers) {
    r.warning(node, wpath, "not given: one worker; write e.g. workers: 2");
    return true;
  }
  if (workers.IsMap()) {
    r.check_keys(workers, wpath, {"count", "processes"});
    if (auto c = workers["count"]) {
      auto v = r.integer(c, join_key(wpath, "count"), 1, "count: 2");
      if (!v) return false;
      spec.workers = *v;
    }
    if (auto p = workers["processes"]; p && !p.IsNull()) {
      auto v = r.integer(p, join_key(wpath, "processes"), 1, "processes: 4");
      if (!v) return false;
      spec.processes = *v;
    }
    return true;
  }
  auto v = r.integer(workers, wpath, 1, "workers: 2 (or workers: {count: 2, processes: 4})");
  if (!v) return false;
  spec.workers = *v;
  return true;
}

}  // namespace

std::optional<HorovodSpec> parse_horovod(YamlReader& r, const YAML::Node& node,
                                         const std::string& path) {
  HorovodSpec spec;
  spec.where = r.where(node);
  if (node.IsNull()) return spec;  // horovod: with nothing = one worker
  if (!r.expect_map(node, path, "horovod: {workers: 2}")) return std::nullopt;
  r.check_keys(node, path, {"workers", "version", "processes", "elastic"});
  if (auto p = node["processes"]) {
    std::string count = node["workers"] && node["workers"].IsScalar() ? node["workers"].Scalar() : "N";
    r.error(p, join_key(path, "processes"),
            "processes belongs under workers: write workers: {count: " + count +
                ", processes: " + (p.IsScalar() ? p.Scalar() : "P") + "}");
    return std::nullopt;
  }
  if (auto v = node["version"]) {
    r.warning(v, join_key(path, "version"),
              "ignored: the Horovod-compatible library comes with riseml; the site decides images");
  }
  const bool workers_ok = parse_workers(r, node, path, spec);
  // elastic is checked even when workers is wrong, so one pass reports both.
  for (const auto& kv : node) {
    if (!kv.first.IsScalar() || kv.first.Scalar() != "elastic") continue;
    if (!parse_elastic(r, kv.first, kv.second, join_key(path, "elastic"),
                       workers_ok ? std::optional<long long>(spec.workers) : std::nullopt,
                       spec.elastic))
      return std::nullopt;
  }
  if (!workers_ok) return std::nullopt;
  return spec;
}

void parse_torch_distributed(YamlReader& r, const YAML::Node& node, TrainSection& train) {
  const std::string path = "train.torch_distributed";
  if (!node.IsNull() && !r.expect_map(node, path, "torch_distributed: {workers: 2}")) return;
  std::string backend = "riseml";
  if (node.IsMap()) {
    r.check_keys(node, path, {"workers", "backend", "elastic"});
    if (auto e = node["elastic"]) {
      refuse_elastic(r, e, join_key(path, "elastic"), "torch.distributed workers");
      return;
    }
    if (auto b = node["backend"]) {
      const auto name = r.string(b, join_key(path, "backend"));
      if (!name) return;
      if (*name != "riseml" && *name != "gloo" && *name != "nccl") {
        r.error(b, join_key(path, "backend"),
                "'" + *name + "' is not a backend we start; use riseml, gloo or nccl");
        return;
      }
      backend = *name;
    }
  }
  // The workers read as Horovod's: the same layout.
  HorovodSpec spec;
  if (node.IsMap() && node["workers"]) {
    YAML::Node workers_only(YAML::NodeType::Map);
    workers_only["workers"] = node["workers"];
    auto parsed = parse_horovod(r, workers_only, path);
    if (!parsed) return;
    spec = *parsed;
  } else {
    r.warning(node, join_key(path, "workers"), "not given: one worker; write e.g. workers: 2");
  }
  spec.where = r.where(node);
  train.horovod = spec;
  train.torch_backend = backend;
}

namespace {

std::optional<RoleSpec> parse_role(YamlReader& r, const YAML::Node& node,
                                   const std::string& path) {
  RoleSpec role;
  if (node.IsMap()) {
    r.check_keys(node, path, {"count", "resources"});
    if (auto c = node["count"]) {
      auto v = r.integer(c, join_key(path, "count"), 1, "count: 2");
      if (!v) return std::nullopt;
      role.count = *v;
    }
    if (auto res = node["resources"]) {
      role.resources = parse_resources(r, res, join_key(path, "resources"));
      if (!role.resources) return std::nullopt;
    }
    return role;
  }
  auto v = r.integer(node, path, 1, "2 (or {count: 2, resources: {...}})");
  if (!v) return std::nullopt;
  role.count = *v;
  return role;
}

void parse_distributed_map(YamlReader& r, const YAML::Node& node, const std::string& path,
                           TrainSection& train) {
  // RiseML docs of 2018-02 briefly spelt Horovod as a kind of distribution.
  const YAML::Node type = node["type"];
  if (type && type.IsScalar() && type.Scalar() == "horovod") {
    r.check_keys(node, path, {"type", "worker", "workers", "elastic"});
    if (auto e = node["elastic"]) {
      // Our own key: read in our spelling only, not in this old one.
      r.error(e, join_key(path, "elastic"),
              "elastic is read under horovod: only: write horovod: {workers: N, elastic: ...} "
              "under tensorflow instead of distributed: {type: horovod}");
      return;
    }
    YAML::Node count = node["workers"] ? node["workers"] : node["worker"];
    std::string n = count && count.IsScalar() ? count.Scalar() : "N";
    r.warning(node, path,
              "distributed: {type: horovod} is an old spelling: write horovod: {workers: " + n + "}");
    HorovodSpec spec{
        .workers = 1, .processes = std::nullopt, .elastic = std::nullopt, .where = r.where(node)};
    if (count) {
      if (auto v = r.integer(count, join_key(path, node["workers"] ? "workers" : "worker"), 1,
                             "workers: 2"))
        spec.workers = *v;
      else
        return;
    }
    train.horovod = spec;
    return;
  }
  if (type) {
    r.error(type, join_key(path, "type"),
            "the only type RiseML knew was 'horovod'; for parameter servers write "
            "distributed: {ps: 1, worker: 2}");
    return;
  }
  if (auto h = node["horovod"]) {
    r.check_keys(node, path, {"horovod"});
    r.warning(node, path, "distributed: {horovod: ...} is an old spelling: write horovod: ... "
                          "directly under tensorflow");
    train.horovod = parse_horovod(r, h, join_key(path, "horovod"));
    return;
  }
  r.check_keys(node, path, {"ps", "worker", "master", "elastic"});
  if (auto e = node["elastic"]) {
    refuse_elastic(r, e, join_key(path, "elastic"), "parameter-server TensorFlow");
    return;
  }
  DistributedSpec spec;
  spec.where = r.where(node);
  bool ok = true;
  if (auto ps = node["ps"]) {
    auto role = parse_role(r, ps, join_key(path, "ps"));
    ok &= role.has_value();
    if (role) spec.ps = *role;
  }
  if (auto w = node["worker"]) {
    auto role = parse_role(r, w, join_key(path, "worker"));
    ok &= role.has_value();
    if (role) spec.worker = *role;
  }
  if (auto m = node["master"]) {
    const std::string mpath = join_key(path, "master");
    if (r.expect_map(m, mpath, "master: {resources: {cpus: 2}}")) {
      r.check_keys(m, mpath, {"resources"});
      if (auto res = m["resources"]) {
        spec.master = parse_resources(r, res, join_key(mpath, "resources"));
        ok &= spec.master.has_value();
      }
    }
  }
  if (ok) train.distributed = spec;
}

void parse_distributed(YamlReader& r, const YAML::Node& tf, TrainSection& train) {
  const YAML::Node node = tf["distributed"];
  const std::string path = join_key(kSection, "distributed");
  const YAML::Node ps_count = tf["ps-count"];
  const YAML::Node worker_count = tf["worker-count"];
  if (!node || node.IsNull()) {
    if (ps_count || worker_count)
      r.error(ps_count ? ps_count : worker_count, kSection,
              "ps-count/worker-count need distributed: write distributed: {ps: 1, worker: 2}");
    return;
  }
  if (node.IsScalar()) {
    // RiseML 0.7: distributed: true, with ps-count and worker-count beside it.
    auto on = r.boolean(node, path);
    if (!on) return;
    if (!*on) {
      r.warning(node, path, "distributed: false is the old spelling of not distributed: remove it");
      if (ps_count || worker_count)
        r.warning(ps_count ? ps_count : worker_count, kSection,
                  "ps-count/worker-count are ignored: distributed is false");
      return;
    }
    DistributedSpec spec;
    spec.where = r.where(node);
    if (ps_count) {
      auto v = r.integer(ps_count, join_key(kSection, "ps-count"), 1, "ps-count: 1");
      if (!v) return;
      spec.ps.count = *v;
    }
    if (worker_count) {
      auto v = r.integer(worker_count, join_key(kSection, "worker-count"), 1, "worker-count: 2");
      if (!v) return;
      spec.worker.count = *v;
    }
    r.warning(node, path,
              "distributed: true with ps-count/worker-count is the old spelling: write "
              "distributed: {ps: " + std::to_string(spec.ps.count) +
                  ", worker: " + std::to_string(spec.worker.count) + "}");
    train.distributed = spec;
    return;
  }
  if (ps_count || worker_count) {
    r.error(ps_count ? ps_count : worker_count, kSection,
            "ps-count/worker-count and a distributed mapping both give counts; keep "
            "distributed: {ps: N, worker: M}");
    return;
  }
  if (!r.expect_map(node, path, "distributed: {ps: 1, worker: 2}")) return;
  parse_distributed_map(r, node, path, train);
}

}  // namespace

void parse_tensorflow_section(YamlReader& r, const YAML::Node& node, TrainSection& train) {
  if (node.IsNull()) return;
  if (!r.expect_map(node, kSection, "tensorflow: {version: 1.5.0}")) return;
  r.check_keys(node, kSection,
               {"version", "tensorboard", "horovod", "distributed", "ps-count", "worker-count"});
  if (!train.framework) {
    // RiseML's tensorflow section implied the framework.
    train.framework = "tensorflow";
    train.framework_where = r.where(node);
  }

  if (auto v = node["version"]; v && !v.IsNull()) {
    static const std::regex re("[A-Za-z0-9][A-Za-z0-9._+-]*");
    auto text = r.string(v, join_key(kSection, "version"));
    if (text && (text->size() > 128 || !std::regex_match(*text, re))) {
      r.error(v, join_key(kSection, "version"),
              "'" + *text + "' is not a version; write e.g. version: 1.5.0");
    } else if (text) {
      train.framework_version = *text;
    }
  }

  if (auto tb = node["tensorboard"]) {
    const std::string path = join_key(kSection, "tensorboard");
    if (tb.IsScalar() && tb.Tag() == "?" && tb.Scalar().find('/') != std::string::npos) {
      r.warning(tb, path,
                "a log folder here is the old spelling: write tensorboard: true and write the "
                "summaries under $OUTPUT_DIR");
      train.tensorboard = true;
    } else if (tb.IsScalar() && tb.Scalar().find('$') != std::string::npos) {
      r.warning(tb, path, "a folder here is the old spelling: write tensorboard: true");
      train.tensorboard = true;
    } else if (auto b = r.boolean(tb, path)) {
      train.tensorboard = *b;
    }
  } else {
    train.tensorboard = true;  // RiseML's default for TensorFlow jobs
  }

  if (auto h = node["horovod"]) {
    if (auto spec = parse_horovod(r, h, join_key(kSection, "horovod"))) train.horovod = spec;
  }
  const bool had_horovod = train.horovod.has_value();
  parse_distributed(r, node, train);
  if (train.distributed && train.horovod) {
    r.error(node["distributed"], join_key(kSection, "distributed"),
            "Horovod and parameter-server TensorFlow cannot be combined: keep either horovod: "
            "or distributed:");
  } else if (had_horovod && node["distributed"] && node["distributed"].IsMap() &&
             (node["distributed"]["type"] || node["distributed"]["horovod"])) {
    r.error(node["distributed"], join_key(kSection, "distributed"),
            "Horovod is given twice (horovod: and distributed:); keep horovod:");
  }
}

}  // namespace riseml
