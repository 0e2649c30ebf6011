#include <riseml/common/atomic_file.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace riseml {

std::string write_file_atomically(const std::string& path, const std::string& content,
                                  unsigned mode) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  int fd = mkstemp(tmpl.data());
  if (fd < 0) return "cannot create a file in " + dir.string() + ": " + std::strerror(errno);
  auto fail = [&](const std::string& what) {
    std::string msg = what + ": " + std::strerror(errno);
    close(fd);
    unlink(tmpl.c_str());
    return msg;
  };
  size_t written = 0;
  while (written < content.size()) {
    ssize_t n = write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("writing " + tmpl);
    }
    written += static_cast<size_t>(n);
  }
  if (fchmod(fd, mode) != 0) return fail("setting the mode of " + tmpl);
  if (fsync(fd) != 0) return fail("flushing " + tmpl);
  if (close(fd) != 0) {
    unlink(tmpl.c_str());
    return "closing " + tmpl + ": " + std::strerror(errno);
  }
  if (rename(tmpl.c_str(), path.c_str()) != 0) {
    std::string msg = "replacing " + path + ": " + std::strerror(errno);
    unlink(tmpl.c_str());
    return msg;
  }
  return "";
}

}  // namespace riseml
