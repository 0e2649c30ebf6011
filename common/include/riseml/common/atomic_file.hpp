// Writes a file so that readers see the old content or the whole new one, never a part.
#pragma once

#include <string>

namespace riseml {

// Writes to a temporary file beside `path`, fsyncs, then renames over `path`.
// Returns an empty string on success, else what went wrong (and `path` is untouched).
std::string write_file_atomically(const std::string& path, const std::string& content,
                                  unsigned mode = 0644);

}  // namespace riseml
