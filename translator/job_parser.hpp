// riseml.yml text -> JobFile, with every problem reported in one pass.
#pragma once

#include <optional>
#include <string>

#include "diagnostics.hpp"
#include "job_model.hpp"

namespace riseml {

// Returns the job when the file has no errors (warnings allowed), nullopt otherwise.
std::optional<JobFile> parse_job_text(const std::string& text, const std::string& file,
                                      Diagnostics& diags);
std::optional<JobFile> parse_job_file(const std::string& path, Diagnostics& diags);

}  // namespace riseml
