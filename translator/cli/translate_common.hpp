// Shared by the subcommands that translate: load the site, translate, report diagnostics.
#pragma once

#include <optional>
#include <string>

#include "../translation.hpp"

namespace riseml::cli {

// Prints warnings and errors on stderr. Returns the translation only when it has a script.
std::optional<Translation> translate_with_site(const std::string& file, const std::string& site);

}  // namespace riseml::cli
