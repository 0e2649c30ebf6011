// horovod.elastic: how few worker nodes an elastic Horovod job goes on with, and how many it
// requests up front; Horovod's elastic knobs, each passed to riseml-elastic only when given
// (reset_limit: --reset-limit, blacklist_cooldown: [low, high] --blacklist-cooldown-range,
// timeout: --elastic-timeout); and the layouts that cannot be elastic, refused where they name
// it.
#include <algorithm>
#include <cctype>

#include "section_parsers.hpp"

namespace riseml {

namespace {

// A typo (max_workers: 40000) would otherwise become a job that waits in the queue for ever;
// riseml-elastic also starts one srun per node from the batch host.
constexpr long long kMaxElasticNodes = 1024;

const std::string kExample = "elastic: {min_workers: 2, max_workers: 4}";

// Bounds that catch typos; riseml-elastic takes --reset-limit up to 2^20.
constexpr long long kMaxResetLimit = 1000000;
constexpr double kMaxCooldown = 86400;  // a day
constexpr double kMaxTimeout = 604800;  // a week
const std::string kCooldownExample = "blacklist_cooldown: [60, 600]";

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

// reset_limit, blacklist_cooldown and timeout, each only when given; false after errors.
bool parse_knobs(YamlReader& r, const YAML::Node& node, const std::string& path,
                 ElasticSpec& spec) {
  bool ok = true;
  if (auto n = node["reset_limit"]) {
    const std::string at = join_key(path, "reset_limit");
    auto v = r.integer(n, at, 0, "reset_limit: 3");
    if (v && *v > kMaxResetLimit) {
      r.error(n, at,
              "is " + std::to_string(*v) + ", more than " + std::to_string(kMaxResetLimit) +
                  ": write reset_limit: " + std::to_string(kMaxResetLimit) +
                  " or less (or leave it out: no limit)");
      v.reset();
    }
    ok &= v.has_value();
    spec.reset_limit = v;
  }
  if (auto n = node["blacklist_cooldown"]) {
    const std::string at = join_key(path, "blacklist_cooldown");
    if (!n.IsSequence() || n.size() != 2) {
      r.error(
          n, at,
          "must be a list of two numbers of seconds, [low, high], got " +
              (n.IsSequence() ? std::to_string(n.size()) + " value(s)" : YamlReader::describe(n)) +
              "; write e.g. " + kCooldownExample);
      ok = false;
    } else {
      std::optional<double> bound[2];
      for (size_t i = 0; i < 2; ++i) {
        const std::string item = at + "[" + std::to_string(i) + "]";
        bound[i] = r.number(n[i], item, 0, true, kCooldownExample);
        if (bound[i] && *bound[i] > kMaxCooldown) {
          r.error(n[i], item,
                  "is " + n[i].Scalar() +
                      " seconds, more than a day (86400): write 86400 or less, e.g. " +
                      kCooldownExample);
          bound[i].reset();
        }
      }
      if (!bound[0] || !bound[1]) {
        ok = false;
      } else if (*bound[0] > *bound[1]) {
        r.error(n, at,
                "low " + n[0].Scalar() + " is more than high " + n[1].Scalar() +
                    ": write the shorter cooldown first, e.g. " + kCooldownExample);
        ok = false;
      } else {
        spec.blacklist_cooldown = std::make_pair(*bound[0], *bound[1]);
      }
    }
  }
  if (auto n = node["timeout"]) {
    const std::string at = join_key(path, "timeout");
    auto v = r.number(n, at, 0, false, "timeout: 600 (seconds)");
    if (v && *v > kMaxTimeout) {
      r.error(n, at,
              "is " + n.Scalar() +
                  " seconds, more than a week (604800): write timeout: 604800 or less");
      v.reset();
    }
    ok &= v.has_value();
    spec.timeout = v;
  }
  return ok;
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
    r.check_keys(node, path,
                 {"min_workers", "max_workers", "reset_limit", "blacklist_cooldown", "timeout"});
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
    ok &= parse_knobs(r, node, path, spec);
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
