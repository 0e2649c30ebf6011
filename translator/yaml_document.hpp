// Loads a YAML file into a yaml-cpp node, turning every failure into a located diagnostic.
#pragma once

#include <optional>
#include <string>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include "diagnostics.hpp"

namespace riseml {

// Bounds that keep hostile input cheap: a riseml.yml is a few hundred bytes.
inline constexpr size_t kMaxYamlBytes = 1 << 20;
inline constexpr int kMaxYamlDepth = 32;
inline constexpr size_t kMaxYamlNodes = 100000;

// Parses `text` (named `file` in messages). Returns nullopt after reporting the problem:
// a syntax error, a file too large or too deep, a duplicate key, a tab in the indentation.
std::optional<YAML::Node> load_yaml(const std::string& text, const std::string& file,
                                    Diagnostics& diags);

// Reads `path` (at most kMaxYamlBytes + 1 bytes); a missing or unreadable file is reported.
std::optional<std::string> read_yaml_text(const std::string& path, Diagnostics& diags);

// Reads `path` and parses it; a missing or unreadable file is reported too.
std::optional<YAML::Node> load_yaml_file(const std::string& path, Diagnostics& diags);

Location location_of(const YAML::Node& node, const std::string& file);

}  // namespace riseml
