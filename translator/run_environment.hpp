// Where the job's commands run: a container image (pyxis), modules, a venv, or the submitting
// environment. Decided from the job's image/framework and the site file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "diagnostics.hpp"
#include "job_model.hpp"
#include "site_config.hpp"

namespace riseml {

struct RunEnvironment {
  std::optional<std::string> container_image;  // in pyxis/enroot form
  std::vector<std::string> modules;
  std::optional<std::string> venv;
  std::vector<std::string> comments;  // what was decided and why, for the script
};

// docker-style "gcr.io/x/y:tag" -> enroot-style "gcr.io#x/y:tag"; Docker Hub names unchanged.
std::string pyxis_image_name(const std::string& docker_reference);

std::optional<RunEnvironment> resolve_run_environment(const JobFile& job, const SiteConfig& site,
                                                      Diagnostics& diags);

}  // namespace riseml
