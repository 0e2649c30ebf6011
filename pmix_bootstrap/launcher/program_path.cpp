#include "program_path.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <string_view>

namespace riseml::launch {

namespace {

bool is_executable_file(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::optional<std::string> find_program(const std::string& name, const char* search_path) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (is_executable_file(name)) return name;
    return std::nullopt;
  }
  std::string_view directories(search_path != nullptr ? search_path
                                                      : "/usr/local/bin:/usr/bin:/bin");
  while (true) {
    std::size_t colon = directories.find(':');
    std::string_view directory = directories.substr(0, colon);
    std::string candidate = directory.empty() ? name : std::string(directory) + "/" + name;
    if (is_executable_file(candidate)) return candidate;
    if (colon == std::string_view::npos) return std::nullopt;
    directories.remove_prefix(colon + 1);
  }
}

}  // namespace riseml::launch
