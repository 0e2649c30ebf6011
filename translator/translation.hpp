// The whole translation: riseml.yml -> (site) -> layout -> environment -> sbatch script.
#pragma once

#include <optional>
#include <string>

#include "diagnostics.hpp"
#include "job_model.hpp"
#include "site_config.hpp"

namespace riseml {

struct Translation {
  std::optional<JobFile> job;
  std::optional<std::string> script;  // set only when there were no errors
  Diagnostics diagnostics;
};

Translation translate_text(const std::string& text, const std::string& name,
                           const SiteConfig& site);
Translation translate_file(const std::string& path, const SiteConfig& site);

}  // namespace riseml
