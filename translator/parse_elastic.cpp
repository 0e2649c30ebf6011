// horovod.elastic: how few worker nodes an elastic Horovod job goes on with, and how many it
// requests up front; and the layouts that cannot be elastic, refused where they name it.
#include <algorithm>
#include <cctype>

#include "section_parsers.hpp"

namespace riseml {

namespace {

// A typo (max_workers: 40000) would otherwise become a job that waits in the queue for ever;
// riseml-elastic also starts one srun per node from the batch host.
constexpr long long kMaxElasticNodes = 1024;

const std::string kExample = "elastic: {min_workers: 2, max_workers: 4}";

// true/false, YAML 1.1's yes/no/on/off and quoted 'true': YamlReader::boolean reads them
// (warning about the last two); anything else gets this key's own message.
bool looks_boolean(const YAML::Node& node) {
  if (!node.IsScalar()) return false;
  std::string lower = node.Scalar();
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  for (const char* word : {"true", "false", "yes", "no", "on", "off", "y", "n"})
    if (lower == word) return true;
  return false;
}

}  // namespace

bool parse_elastic(YamlReader& r, const YAML::Node& key, const YAML::Node& node,
                   const std::string& path, std::optional<long long> workers,
                   std::optional<ElasticSpec>& out) {
  ElasticSpec spec;
  spec.where = r.where(node.IsNull() ? key : node);
  spec.max_workers = workers.value_or(1);
  const std::string min_path = join_key(path, "min_workers");
  const std::string max_path = join_key(path, "max_workers");
  bool ok = true;
  bool max_given = false;
  if (looks_boolean(node)) {
    auto on = r.boolean(node, path);
    if (!on) return false;
    if (!*on) return true;  // elastic: false = not elastic
    // elastic: true = {min_workers: 1, max_workers: workers}
  } else if (!node.IsMap()) {
    // A missing value's place is the next token, often the next line: name the key's.
    r.error(node.IsNull() ? key : node, path,
            "must be true or a mapping of min_workers and max_workers, got " +
                YamlReader::describe(node) + "; write e.g. elastic: true or " + kExample);
    return false;
  } else {
    r.check_keys(node, path, {"min_workers", "max_workers"});
    if (auto min = node["min_workers"]) {
      auto v = r.integer(min, min_path, 1, "min_workers: 2");
      ok &= v.has_value();
      if (v) spec.min_workers = *v;
      if (v && workers && *v > *workers) {
        r.error(min, min_path,
                "is " + std::to_string(*v) + ", more than the " + std::to_string(*workers) +
                    " worker node(s) the job starts with, so it would end at once: write "
                    "min_workers: " +
                    std::to_string(*workers) + " or less (or raise workers)");
        ok = false;
      }
    }
    if (auto max = node["max_workers"]) {
      max_given = true;
      auto v = r.integer(max, max_path, 1, "max_workers: 4");
      ok &= v.has_value();
      if (v) spec.max_workers = *v;
      if (v && workers && *v < *workers) {
        r.error(max, max_path,
                "is " + std::to_string(*v) + ", fewer than the " + std::to_string(*workers) +
                    " worker node(s) started: max_workers counts the nodes requested, the "
                    "workers plus spares; write max_workers: " +
                    std::to_string(*workers) + " or more (or lower workers)");
        ok = false;
      } else if (v && *v > kMaxElasticNodes) {
        r.error(max, max_path,
                "is " + std::to_string(*v) + "; an elastic job requests at most " +
                    std::to_string(kMaxElasticNodes) +
                    " nodes: write max_workers: " + std::to_string(kMaxElasticNodes) + " or less");
        ok = false;
      }
    }
  }
  if (!max_given && workers && *workers > kMaxElasticNodes) {
    r.error(node, max_path,
            "defaults to workers (" + std::to_string(*workers) + "), more than the " +
                std::to_string(kMaxElasticNodes) +
                " nodes an elastic job may request: lower workers to " +
                std::to_string(kMaxElasticNodes) + " or less");
    ok = false;
  }
  // Without a valid workers count the checks above are incomplete: the caller reports that.
  if (!ok || !workers) return false;
  out = spec;
  return true;
}

void refuse_elastic(YamlReader& r, const YAML::Node& node, const std::string& path,
                    const std::string& layout) {
  r.error(node, path,
          "elastic needs horovod: " + layout +
              " cannot lose a node and go on; write horovod: {workers: N, elastic: true} "
              "instead, or remove elastic");
}

}  // namespace riseml
