#include "elastic_driver.hpp"

namespace riseml {

namespace {
const std::string kDriver = "riseml-elastic";
}  // namespace

std::optional<std::string> elastic_driver_beside(const std::string& riseml_command) {
  // The project installs both programs into the same bin folder. The site's
  // riseml: is written unquoted as a command for `riseml tf-config`, so the sibling is too.
  if (riseml_command.find_first_of(" \t") != std::string::npos) return std::nullopt;
  if (riseml_command == "riseml") return kDriver;
  const std::string tail = "/riseml";
  if (riseml_command.size() > tail.size() && riseml_command.ends_with(tail))
    return riseml_command.substr(0, riseml_command.size() - tail.size() + 1) + kDriver;
  return std::nullopt;
}

std::string elastic_driver_command(const std::string& riseml_command) {
  return elastic_driver_beside(riseml_command).value_or(kDriver);
}

}  // namespace riseml
