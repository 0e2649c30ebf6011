// What an image name may look like, wherever one is written: train.image, the old
// image: {name}, and the site file's image and gpu_image.
#pragma once

#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "yaml_reader.hpp"

namespace riseml {

// Why `name` is not an image name (empty, or with spaces or quotes), ready to follow
// "KEY: " in a diagnostic; nullopt when it is one.
std::optional<std::string> image_name_problem(const std::string& name);

// The image name at `node`: one line of text (the reader's rule, so no control characters)
// that image_name_problem accepts. nullopt after reporting what is wrong.
std::optional<std::string> read_image_name(YamlReader& r, const YAML::Node& node,
                                           const std::string& path);

}  // namespace riseml
