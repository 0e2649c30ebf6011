#include "translation.hpp"

#include <filesystem>

#include "job_layout.hpp"
#include "job_parser.hpp"
#include "run_environment.hpp"
#include "sbatch_writer.hpp"

namespace riseml {

namespace {

void finish(Translation& t, const SiteConfig& site) {
  if (!t.job) return;
  auto layout = plan_layout(*t.job, site, t.diagnostics);
  auto environment = resolve_run_environment(*t.job, site, t.diagnostics);
  if (!layout || !environment || t.diagnostics.has_errors()) return;
  std::string name = std::filesystem::path(t.job->path).filename().string();
  t.script = write_sbatch_script({*t.job, site, *layout, *environment, name});
}

}  // namespace

Translation translate_text(const std::string& text, const std::string& name,
                           const SiteConfig& site) {
  Translation t;
  t.job = parse_job_text(text, name, t.diagnostics);
  finish(t, site);
  return t;
}

Translation translate_file(const std::string& path, const SiteConfig& site) {
  Translation t;
  t.job = parse_job_file(path, t.diagnostics);
  finish(t, site);
  return t;
}

}  // namespace riseml
