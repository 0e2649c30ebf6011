#include "image_name.hpp"

namespace riseml {

std::optional<std::string> image_name_problem(const std::string& name) {
  // Docker and enroot references have no spaces or quotes; one with them is a command or a
  // list pasted into the wrong key.
  if (!name.empty() && name.find_first_of(" '\"") == std::string::npos) return std::nullopt;
  return "'" + name + "' is not an image name: write e.g. image: pytorch/pytorch:2.1";
}

std::optional<std::string> read_image_name(YamlReader& r, const YAML::Node& node,
                                           const std::string& path) {
  auto name = r.string(node, path);
  if (!name) return std::nullopt;
  if (auto problem = image_name_problem(*name)) {
    r.error(node, path, *problem);
    return std::nullopt;
  }
  return name;
}

}  // namespace riseml
