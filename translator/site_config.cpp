#include "site_config.hpp"

#include <cstdio>
#include <filesystem>

#include <riseml/model/links.hpp>

#include "image_name.hpp"
#include "section_parsers.hpp"
#include "yaml_document.hpp"

namespace riseml {

namespace {

std::optional<FrameworkEnvironment> parse_environment(YamlReader& r, const YAML::Node& node,
                                                      const std::string& path) {
  if (!r.expect_map(node, path, "{image: nvcr.io#nvidia/pytorch:24.01-py3}")) return std::nullopt;
  r.check_keys(node, path, {"image", "gpu_image", "modules", "venv"});
  FrameworkEnvironment env;
  if (auto n = node["image"]) env.image = read_image_name(r, n, join_key(path, "image"));
  if (auto n = node["gpu_image"])
    env.gpu_image = read_image_name(r, n, join_key(path, "gpu_image"));
  if (auto n = node["venv"]) env.venv = r.string(n, join_key(path, "venv"));
  if (auto n = node["modules"]) env.modules = parse_module_list(r, n, join_key(path, "modules"));
  return env;
}

// A rate ("25gbit") or a duration ("5us") through the model's unit parsers, reported in the
// translator's style when it is not one. Values no machine has (a link of 1e-300 GB/s, a cycle
// of 1e308 us) are refused too: the model would print steps hundreds of digits long.
constexpr double kLowestRate = 1e3, kHighestRate = 1e14;  // 1 kbyte/s .. 100 tbyte/s
constexpr double kLongestDuration = 10;                    // seconds: a latency or a cycle

std::optional<double> read_unit(YamlReader& r, const YAML::Node& node, const std::string& path, bool rate) {
  auto text = r.string(node, path);
  if (!text) return std::nullopt;
  auto v = rate ? model::parse_rate(*text) : model::parse_duration(*text);
  if (!v) {
    r.error(node, path,
            rate ? "'" + *text + "' is not a rate: write bits or bytes a second with a unit, e.g. 25gbit, "
                                 "100gbit, 3.1gbyte (a plain number is bytes a second)"
                 : "'" + *text + "' is not a duration: write it with a unit, e.g. 5us, 1.5us, 0.2ms");
  } else if (rate && (*v < kLowestRate || *v > kHighestRate)) {
    r.error(node, path, "'" + *text + "' is out of range: a rate from 1kbyte to 100tbyte a second, e.g. 25gbit");
    return std::nullopt;
  } else if (!rate && *v > kLongestDuration) {
    r.error(node, path, "'" + *text + "' is out of range: a duration of at most 10s, e.g. 5us, 0.2ms");
    return std::nullopt;
  }
  return v;
}

void parse_link(YamlReader& r, const YAML::Node& node, const std::string& path, SiteLink& link,
                const std::string& example) {
  if (!r.expect_map(node, path, example)) return;
  r.check_keys(node, path, {"bandwidth", "latency"});
  if (auto n = node["bandwidth"]) {
    if (auto v = read_unit(r, n, join_key(path, "bandwidth"), true)) link.bandwidth_Bps = *v;
  } else {
    r.error(node, path, "needs bandwidth (and latency): e.g. " + example);
  }
  if (auto n = node["latency"]) {
    if (auto v = read_unit(r, n, join_key(path, "latency"), false)) link.latency_s = *v;
  }
}

std::optional<SiteNetwork::HostPath> parse_host_path(YamlReader& r, const YAML::Node& node) {
  const std::string path = "network.host_path";
  const std::string example = "host_path: {staging_bandwidth: 6gbyte, reduce_bandwidth: 4gbyte, latency: 20us}";
  if (!r.expect_map(node, path, example)) return std::nullopt;
  r.check_keys(node, path, {"staging_bandwidth", "reduce_bandwidth", "latency"});
  SiteNetwork::HostPath host;
  bool complete = true;
  auto read = [&](const char* key, bool rate, double& into) {
    if (auto n = node[key]) {
      if (auto v = read_unit(r, n, join_key(path, key), rate)) into = *v;
      else complete = false;
    } else {
      r.error(node, path, std::string("needs ") + key + ", like the other two (docs/model.md, \"GPU nodes\"): e.g. " + example);
      complete = false;
    }
  };
  read("staging_bandwidth", true, host.staging_Bps);
  read("reduce_bandwidth", true, host.reduce_Bps);
  read("latency", false, host.latency_s);
  if (!complete) return std::nullopt;
  return host;
}

// spread: {fast: 0.97, mean: 1.02, slow: 1.15}: the fastest and slowest of the fit's bursts of
// gradients through the engine, each over the model's time for it, and their mean over their
// median (files of 2026-12-06 to 12-07 hold their 5th and 95th percentiles instead).
std::optional<SiteNetwork::Spread> parse_spread(YamlReader& r, const YAML::Node& node) {
  const std::string path = "network.spread";
  const char* example =
      "spread: {fast: 0.97, mean: 1.02, slow: 1.15} (riseml-bench --fit writes it; docs/model.md)";
  if (!r.expect_map(node, path, example)) return std::nullopt;
  r.check_keys(node, path, {"fast", "mean", "slow"});
  SiteNetwork::Spread spread;
  bool ok = true;
  auto read = [&](const char* key, double low, double high, double& into, bool required = true) {
    const std::string at = join_key(path, key);
    auto n = node[key];
    if (!n && !required) return;  // the median
    if (!n) {
      r.error(node, path, std::string("needs ") + key + ": e.g. " + example);
      ok = false;
      return;
    }
    auto v = r.number(n, at, 0, false, example);
    if (!v) {
      ok = false;
    } else if (*v < low || *v > high) {
      char range[64];
      std::snprintf(range, sizeof range, "%g to %g", low, high);
      r.error(n, at, "must be from " + std::string(range) + ": e.g. " + example);
      ok = false;
    } else {
      into = *v;
    }
  };
  read("fast", 0.1, 10, spread.fast);
  read("mean", 0.5, 10, spread.mean, false);
  read("slow", 0.1, 10, spread.slow);
  if (!ok) return std::nullopt;
  if (spread.slow < spread.fast) {
    r.error(node["slow"], join_key(path, "slow"), "must be at least fast: e.g. " + std::string(example));
    return std::nullopt;
  }
  return spread;
}

// hand_over_lag: {fast: 20us, median: 150us, slow: 600us}: how late a gradient handed over
// after idle reached the engine on the slowest rank, beyond a cycle back to back, in the fit's
// tries (the fastest, the median and the slowest).
std::optional<SiteNetwork::HandOverLag> parse_hand_over_lag(YamlReader& r, const YAML::Node& node) {
  const std::string path = "network.hand_over_lag";
  const std::string example =
      "hand_over_lag: {fast: 20us, median: 150us, slow: 600us} (riseml-bench --fit writes it; docs/model.md)";
  if (!r.expect_map(node, path, example)) return std::nullopt;
  r.check_keys(node, path, {"fast", "median", "slow"});
  SiteNetwork::HandOverLag lag;
  bool ok = true;
  auto read = [&](const char* key, double& into) {
    auto n = node[key];
    if (!n) {
      r.error(node, path, std::string("needs ") + key + ": e.g. " + example);
      ok = false;
    } else if (auto v = read_unit(r, n, join_key(path, key), false)) {
      into = *v;
    } else {
      ok = false;
    }
  };
  read("fast", lag.fast_s);
  read("median", lag.median_s);
  read("slow", lag.slow_s);
  if (!ok) return std::nullopt;
  if (lag.median_s < lag.fast_s || lag.slow_s < lag.median_s) {
    r.error(node, path, "needs fast <= median <= slow: e.g. " + example);
    return std::nullopt;
  }
  return lag;
}

std::optional<SiteNetwork> parse_network(YamlReader& r, const YAML::Node& node) {
  const char* example = "network: {gpus_per_node: 4, nodes_link: {bandwidth: 25gbit, latency: 5us}}";
  if (!r.expect_map(node, "network", example)) return std::nullopt;
  r.check_keys(node, "network", {"gpus_per_node", "nodes_link", "intra_node", "reduce_bandwidth",
                                 "copy_bandwidth", "overlap_slowdown", "host_path", "spread",
                                 "cycle_overhead", "hand_over_lag"});
  SiteNetwork net;
  net.where = r.where(node);
  if (auto n = node["gpus_per_node"]) {
    if (auto v = r.integer(n, "network.gpus_per_node", 1, "gpus_per_node: 4")) net.gpus_per_node = *v;
  }
  if (auto n = node["nodes_link"]) {
    parse_link(r, n, "network.nodes_link", net.nodes_link, "nodes_link: {bandwidth: 25gbit, latency: 5us}");
  } else {
    r.error(node, "network", "needs nodes_link, the link between nodes: e.g. nodes_link: {bandwidth: 25gbit, "
                             "latency: 5us}");
  }
  if (auto n = node["intra_node"])
    parse_link(r, n, "network.intra_node", net.intra_node, "intra_node: {bandwidth: 10gbyte, latency: 2us}");
  if (auto n = node["reduce_bandwidth"]) {
    if (auto v = read_unit(r, n, "network.reduce_bandwidth", true)) net.reduce_Bps = *v;
  }
  if (auto n = node["copy_bandwidth"]) {
    if (auto v = read_unit(r, n, "network.copy_bandwidth", true)) net.copy_Bps = *v;
  }
  if (auto n = node["cycle_overhead"]) {
    if (auto v = read_unit(r, n, "network.cycle_overhead", false)) net.cycle_overhead_s = *v;
  }
  if (auto n = node["overlap_slowdown"]) {
    const char* example = "overlap_slowdown: 0.2 (compute runs at 80% while a collective runs)";
    if (auto v = r.number(n, "network.overlap_slowdown", 0, false, example)) {
      if (*v >= 1)
        r.error(n, "network.overlap_slowdown", "must be below 1 (the share of compute speed lost while a "
                                               "collective runs): e.g. " + std::string(example));
      else
        net.overlap_slowdown = *v;
    }
  }
  if (auto n = node["host_path"]) net.host_path = parse_host_path(r, n);
  if (auto n = node["spread"]) net.spread = parse_spread(r, n);
  if (auto n = node["hand_over_lag"]) net.hand_over_lag = parse_hand_over_lag(r, n);
  return net;
}

std::optional<SiteConfig> parse_site_root(const YAML::Node& root, const std::string& file,
                                          Diagnostics& diags) {
  SiteConfig site;
  site.path = file;
  YamlReader r(file, diags);
  if (root.IsNull()) return site;
  if (!r.expect_map(root, "", "bind: auto")) return std::nullopt;
  r.check_keys(root, "", {"bind", "containers", "output_root", "max_array_size", "riseml",
                          "defaults", "frameworks", "network"});
  if (auto n = root["bind"]) {
    auto s = r.string(n, "bind");
    if (s && *s != "auto" && *s != "verbose" && *s != "off") {
      r.error(n, "bind", "must be auto, verbose or off (off: the SPANK plugin is not installed)");
    } else if (s) {
      site.bind = *s;
    }
  }
  if (auto n = root["containers"]) {
    auto s = r.string(n, "containers");
    if (s && *s != "pyxis" && *s != "none") {
      r.error(n, "containers", "must be pyxis or none");
    } else if (s) {
      site.containers = *s;
    }
  }
  if (auto n = root["output_root"])
    site.output_root = r.string(n, "output_root", ScriptText::run_time_path);
  if (auto n = root["riseml"]) {
    // A command the tasks run (it may be a wrapper with arguments): one line.
    if (auto s = r.string(n, "riseml")) site.riseml_command = *s;
  }
  if (auto n = root["max_array_size"]) {
    if (auto v = r.integer(n, "max_array_size", 1, "max_array_size: 1001"))
      site.max_array_size = static_cast<size_t>(*v);
  }
  if (auto n = root["defaults"]) {
    // The same keys as a job's slurm: section; reported under 'slurm' paths.
    parse_slurm_section(r, n, site.defaults);
  }
  if (auto fws = root["frameworks"]) {
    if (r.expect_map(fws, "frameworks", "frameworks: {pytorch: {default: {venv: /opt/torch}}}")) {
      // Framework names and versions reach the script's comments: one line each.
      for (const auto& fw : fws) {
        const auto name = r.string(fw.first, "frameworks");
        if (!name) continue;
        const std::string fpath = join_key("frameworks", *name);
        if (!r.expect_map(fw.second, fpath, "{default: {modules: [pytorch]}}")) continue;
        for (const auto& ver : fw.second) {
          const auto version = r.string(ver.first, fpath);
          if (!version) continue;
          if (auto env = parse_environment(r, ver.second, join_key(fpath, *version)))
            site.frameworks[*name][*version] = *env;
        }
      }
    }
  }
  if (auto n = root["network"]) site.network = parse_network(r, n);
  if (diags.has_errors()) return std::nullopt;
  return site;
}

}  // namespace

std::optional<SiteConfig> parse_site_config_text(const std::string& text, const std::string& file,
                                                 Diagnostics& diags) {
  auto root = load_yaml(text, file, diags);
  if (!root) return std::nullopt;
  return parse_site_root(*root, file, diags);
}

std::optional<SiteConfig> load_site_config(const std::string& path, Diagnostics& diags) {
  std::string chosen = path;
  if (chosen.empty()) {
    std::error_code ec;
    if (!std::filesystem::exists(kDefaultSitePath, ec)) return SiteConfig{};
    chosen = kDefaultSitePath;
  }
  auto root = load_yaml_file(chosen, diags);
  if (!root) return std::nullopt;
  return parse_site_root(*root, chosen, diags);
}

}  // namespace riseml
