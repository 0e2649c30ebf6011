#include "site_config.hpp"

#include <filesystem>

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

std::optional<SiteConfig> parse_site_root(const YAML::Node& root, const std::string& file,
                                          Diagnostics& diags) {
  SiteConfig site;
  site.path = file;
  YamlReader r(file, diags);
  if (root.IsNull()) return site;
  if (!r.expect_map(root, "", "bind: auto")) return std::nullopt;
  r.check_keys(root, "", {"bind", "containers", "output_root", "max_array_size", "riseml",
                          "defaults", "frameworks"});
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
