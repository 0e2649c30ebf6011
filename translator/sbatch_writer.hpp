// Prints the sbatch script for a parsed, planned job. No decisions here beyond formatting:
// the layout (job_layout) and the environment (run_environment) are decided before.
#pragma once

#include <string>

#include "job_layout.hpp"
#include "job_model.hpp"
#include "run_environment.hpp"
#include "site_config.hpp"

namespace riseml {

struct ScriptInputs {
  const JobFile& job;
  const SiteConfig& site;
  const JobLayout& layout;
  const RunEnvironment& environment;
  std::string source_name;  // how the script names the riseml.yml it came from
};

std::string write_sbatch_script(const ScriptInputs& in);

}  // namespace riseml
