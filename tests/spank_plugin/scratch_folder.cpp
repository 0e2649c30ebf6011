#include "scratch_folder.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

namespace riseml::placement::test {

ScratchFolder::ScratchFolder() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/riseml-test.XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    ADD_FAILURE() << "cannot make a temporary folder from " << pattern;
    return;
  }
  path_ = buf.data();
}

ScratchFolder::~ScratchFolder() {
  std::error_code ec;
  if (!path_.empty()) {
    // The cache tests leave folders without write permission for others; we are their owner.
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
}

std::string ScratchFolder::file(const std::string& name, const std::string& text) const {
  const std::string p = path_ + "/" + name;
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) ADD_FAILURE() << "cannot write " << p;
  return p;
}

std::string ScratchFolder::script(const std::string& name, const std::string& body) const {
  const std::string p = file(name, "#!/bin/sh\n" + body + "\n");
  if (chmod(p.c_str(), 0755) != 0) ADD_FAILURE() << "cannot chmod " << p;
  return p;
}

}  // namespace riseml::placement::test
