// A directory only this launcher can enter, for the PMIx server's sockets and files; removed
// with everything in it when the launcher ends, so nothing is left in $TMPDIR or /tmp.
#pragma once

#include <string>

namespace riseml::launch {

class PrivateTmpdir {
 public:
  // Creates $TMPDIR/<prefix>XXXXXX (or /tmp/...) with mode 0700; throws std::system_error.
  explicit PrivateTmpdir(const std::string& prefix);
  PrivateTmpdir(const PrivateTmpdir&) = delete;
  PrivateTmpdir& operator=(const PrivateTmpdir&) = delete;
  ~PrivateTmpdir();

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace riseml::launch
