// Finds the file a program name refers to, as execvp would, but before forking: the children
// then exec a fixed path, and a typo is reported once instead of N times.
#pragma once

#include <optional>
#include <string>

namespace riseml::launch {

// A name with a '/' is taken as a path; otherwise each directory of `search_path` (PATH's
// format; empty entries mean the current directory) is tried. Returns an executable file.
std::optional<std::string> find_program(const std::string& name, const char* search_path);

}  // namespace riseml::launch
