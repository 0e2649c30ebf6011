#include "translate_common.hpp"

#include <iostream>

#include "../printable_text.hpp"
#include "../site_config.hpp"

namespace riseml::cli {

std::optional<Translation> translate_with_site(const std::string& file,
                                               const std::string& site_path) {
  Diagnostics site_diags;
  auto site = load_site_config(site_path, site_diags);
  std::cerr << site_diags.format();
  if (!site) return std::nullopt;
  Translation t = translate_file(file, *site);
  std::cerr << t.diagnostics.format();
  if (!t.script) {
    int n = t.diagnostics.error_count();
    std::cerr << "riseml: " << n << (n == 1 ? " error" : " errors") << " in " << printable(file)
              << "; nothing was written\n";
    return std::nullopt;
  }
  return t;
}

}  // namespace riseml::cli
