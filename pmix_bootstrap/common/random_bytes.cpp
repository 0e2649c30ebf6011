#include "random_bytes.hpp"

#include <sys/random.h>

#include <cerrno>
#include <system_error>

namespace riseml::pmix {

void fill_random(std::span<std::byte> out) {
  std::size_t filled = 0;
  while (filled < out.size()) {
    ssize_t got = getrandom(out.data() + filled, out.size() - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "getrandom");
    }
    filled += static_cast<std::size_t>(got);
  }
}

}  // namespace riseml::pmix
