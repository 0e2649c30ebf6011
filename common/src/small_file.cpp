#include "riseml/common/small_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace riseml {

std::optional<std::string> read_small_file(int fd, std::size_t limit) {
  std::string content;
  char buffer[4096];
  while (content.size() < limit) {
    const ssize_t got = ::read(fd, buffer, std::min(sizeof buffer, limit - content.size()));
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    content.append(buffer, static_cast<std::size_t>(got));
  }
  return content;
}

std::optional<std::string> read_small_file(const std::string& path, std::size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> content = read_small_file(fd, limit);
  ::close(fd);
  return content;
}

}  // namespace riseml
