// riseml translate / validate: print or write the sbatch script, or just check the file.
#include <iostream>

#include <riseml/common/atomic_file.hpp>
#include "../printable_text.hpp"
#include "../translation.hpp"
#include "commands.hpp"
#include "translate_common.hpp"

namespace riseml::cli {

int translate(const std::string& file, const std::string& output, const std::string& site_path) {
  auto t = translate_with_site(file, site_path);
  if (!t) return kExitBadInput;
  if (!output.empty() && output != "-") {
    std::string err = write_file_atomically(output, *t->script, 0755);
    if (!err.empty()) {
      std::cerr << "riseml: " << printable(err) << '\n';
      return kExitFailure;
    }
    std::cerr << "riseml: wrote " << printable(output) << '\n';
  } else {
    std::cout << *t->script;
  }
  return kExitOk;
}

int validate(const std::string& file, const std::string& site_path) {
  auto t = translate_with_site(file, site_path);
  if (!t) return kExitBadInput;
  std::cerr << "riseml: " << printable(file) << " is valid\n";
  return kExitOk;
}

}  // namespace riseml::cli
