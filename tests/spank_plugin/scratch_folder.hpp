// A temporary folder for one test, removed afterwards, with fake helper programs (shell
// scripts) and files written into it.
#pragma once

#include <string>

namespace riseml::placement::test {

class ScratchFolder {
 public:
  ScratchFolder();  // under $TMPDIR or /tmp; ADD_FAILURE when it cannot be made
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;

  const std::string& path() const { return path_; }
  // Writes NAME with `text` (mode 0644) and returns its path.
  std::string file(const std::string& name, const std::string& text) const;
  // Writes an executable "#!/bin/sh" script NAME with `body` and returns its path.
  std::string script(const std::string& name, const std::string& body) const;

 private:
  std::string path_;
};

}  // namespace riseml::placement::test
