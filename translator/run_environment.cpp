#include "run_environment.hpp"

#include "did_you_mean.hpp"

namespace riseml {

std::string pyxis_image_name(const std::string& ref) {
  if (ref.find('#') != std::string::npos) return ref;  // already enroot form
  auto slash = ref.find('/');
  if (slash == std::string::npos) return ref;
  std::string first = ref.substr(0, slash);
  // A registry host has a dot or a port, or is localhost (Docker's own rule).
  bool registry = first.find('.') != std::string::npos || first.find(':') != std::string::npos ||
                  first == "localhost";
  if (!registry) return ref;
  return first + "#" + ref.substr(slash + 1);
}

namespace {

bool uses_gpus(const TrainSection& train) {
  if (train.resources.gpus.value_or(0) > 0) return true;
  if (train.distributed) {
    const auto& d = *train.distributed;
    for (const auto* r : {&d.ps.resources, &d.worker.resources, &d.master})
      if (*r && (*r)->gpus.value_or(0) > 0) return true;
  }
  return false;
}

void use_image(const std::string& image, const SiteConfig& site, const Location& where,
               const std::string& key, RunEnvironment& env, Diagnostics& diags) {
  if (site.containers == "none") {
    diags.warning(where, key,
                  "this cluster runs no containers (site file " + site.path +
                      ": containers: none), so the image '" + image +
                      "' is not used: install what the job needs in its environment");
    env.comments.push_back("image " + image + " not used: the site runs no containers");
    return;
  }
  env.container_image = pyxis_image_name(image);
  env.comments.push_back("container image " + image + " through pyxis (srun --container-image)");
}

// Warnings about what only works inside a container, once the environment is known.
void check_container_needs(const TrainSection& train, const SiteConfig& site,
                           const RunEnvironment& env, Diagnostics& diags) {
  if (!env.container_image) {
    for (const auto* lines : {&train.install, &train.run}) {
      for (const auto& line : *lines) {
        if (line.text.find("/output") == std::string::npos) continue;
        diags.warning(line.where, lines == &train.run ? "train.run" : "train.install",
                      "/output exists only inside a container image; without one write to "
                      "$OUTPUT_DIR instead");
        return;
      }
    }
  } else if (train.distributed) {
    diags.warning(train.distributed->where, "train.tensorflow.distributed",
                  "each task runs '" + site.riseml_command +
                      " tf-config' inside the image to get TF_CONFIG, so the image needs riseml "
                      "(with the site file's riseml: naming it there)");
  }
}

std::optional<RunEnvironment> resolve_environment(const JobFile& job, const SiteConfig& site,
                                                  Diagnostics& diags) {
  const TrainSection& train = job.train;
  RunEnvironment env;
  const int errors_before = diags.error_count();

  if (train.image) {
    use_image(*train.image, site, train.where, "train.image", env, diags);
    if (train.framework_version) {
      diags.warning(train.where, "train.tensorflow.version",
                    "ignored: the image " + *train.image + " decides the framework version");
    }
    return env;
  }
  if (!train.framework) {
    env.comments.push_back("no image and no framework: runs in the submitting environment");
    return env;
  }
  const std::string& fw = *train.framework;
  const std::string version = train.framework_version.value_or("default");
  if (site.frameworks.empty()) {
    const std::string why = site.path.empty()
                                ? "no site file (" + std::string(kDefaultSitePath) + ", or --site)"
                                : "the site file " + site.path + " lists no frameworks";
    diags.warning(train.framework_where, "train.framework",
                  why + ": framework '" + fw +
                      "' runs in the submitting environment; load it before submitting");
    env.comments.push_back("framework " + fw + (train.framework_version ? " " + version : "") +
                           ": " + (site.path.empty() ? "no site file" : "the site lists no frameworks") +
                           ", so the job runs in the submitting environment");
    return env;
  }
  auto fit = site.frameworks.find(fw);
  if (fit == site.frameworks.end()) {
    std::vector<std::string> names;
    for (const auto& [name, _] : site.frameworks) names.push_back(name);
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    diags.error(train.framework_where, "train.framework",
                "this cluster provides no framework '" + fw + "'" + did_you_mean(fw, names) +
                    " (site file " + site.path + " lists: " + (list.empty() ? "none" : list) +
                    "); give an image: instead, or ask your admin");
    return std::nullopt;
  }
  auto vit = fit->second.find(version);
  if (vit == fit->second.end()) vit = fit->second.find("default");
  if (vit == fit->second.end()) {
    std::vector<std::string> versions;
    std::string list;
    for (const auto& [v, _] : fit->second) {
      versions.push_back(v);
      list += (list.empty() ? "" : ", ") + v;
    }
    diags.error(train.framework_where, "train.tensorflow.version",
                "this cluster provides " + fw + " " + list + ", not " + version +
                    did_you_mean(version, versions) + " (site file " + site.path + ")");
    return std::nullopt;
  }
  const FrameworkEnvironment& fe = vit->second;
  std::string what = fw + " " + version;
  if (fe.gpu_image && uses_gpus(train)) {
    use_image(*fe.gpu_image, site, train.where, "train.framework", env, diags);
  } else if (fe.image) {
    use_image(*fe.image, site, train.where, "train.framework", env, diags);
  }
  env.modules = fe.modules;
  env.venv = fe.venv;
  env.comments.push_back(what + " as the site file " + site.path + " provides it");
  if (diags.error_count() > errors_before) return std::nullopt;
  return env;
}

}  // namespace

std::optional<RunEnvironment> resolve_run_environment(const JobFile& job, const SiteConfig& site,
                                                      Diagnostics& diags) {
  auto env = resolve_environment(job, site, diags);
  if (env) check_container_needs(job.train, site, *env, diags);
  return env;
}

}  // namespace riseml
