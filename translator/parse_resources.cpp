// resources: {gpus, cpus, mem}, per process (RiseML: per container).
#include "section_parsers.hpp"

namespace riseml {

std::optional<Resources> parse_resources(YamlReader& r, const YAML::Node& node,
                                         const std::string& path) {
  if (node.IsNull()) {
    Resources empty;
    empty.where = r.where(node);
    return empty;
  }
  if (!r.expect_map(node, path, "resources: {gpus: 1, cpus: 4, mem: 8192}")) return std::nullopt;
  r.check_keys(node, path, {"gpus", "cpus", "mem"});
  Resources res;
  res.where = r.where(node);
  bool ok = true;
  if (auto g = node["gpus"]) {
    auto v = r.integer(g, join_key(path, "gpus"), 0, "gpus: 1");
    ok &= v.has_value();
    if (v && *v > 1024) {
      r.error(g, join_key(path, "gpus"), "more than 1024 GPUs per process is not a real node");
      ok = false;
    }
    res.gpus = v;
  }
  if (auto c = node["cpus"]) {
    auto v = r.number(c, join_key(path, "cpus"), 0, true, "cpus: 4");
    ok &= v.has_value();
    if (v && *v > 100000) {
      r.error(c, join_key(path, "cpus"), "more than 100000 CPUs per process is not a real node");
      ok = false;
    }
    res.cpus = v;
  }
  if (auto m = node["mem"]) {
    auto v = r.number(m, join_key(path, "mem"), 0, true, "mem: 8192 (megabytes)");
    ok &= v.has_value();
    if (v && *v > 1e9) {
      r.error(m, join_key(path, "mem"), "more than 1 PB of memory: mem is in megabytes");
      ok = false;
    }
    res.mem_mb = v;
    if (v && *v < 32) {
      r.warning(m, join_key(path, "mem"),
                "mem is in megabytes: " + m.Scalar() + " MB is too little for a Python process; "
                "write e.g. mem: " + std::to_string(static_cast<long long>(*v * 1024)) +
                    " for " + m.Scalar() + " GB");
    }
  }
  if (!ok) return std::nullopt;
  return res;
}

}  // namespace riseml
