#include "private_tmpdir.hpp"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

namespace riseml::launch {

PrivateTmpdir::PrivateTmpdir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/" + prefix + "XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(),
                            "cannot create a private directory " + pattern);
  }
  path_ = buffer.data();
}

PrivateTmpdir::~PrivateTmpdir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace riseml::launch
