// Reads a small file whole, such as /proc/PID/stat, without exceptions: a process that exits
// between the open and the read makes read() fail (ESRCH), which std::ifstream's buffer turns
// into an exception that the stream iterators let through.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace riseml {

// The content of `path`, at most `limit` bytes; nothing when it cannot be opened or read.
std::optional<std::string> read_small_file(const std::string& path, std::size_t limit = 1u << 20);

// The same from an open descriptor (read to its end or `limit`; not closed here).
std::optional<std::string> read_small_file(int fd, std::size_t limit = 1u << 20);

}  // namespace riseml
