// Quoting for the generated bash script.
#pragma once

#include <string>

namespace riseml {

// 'text' with embedded single quotes closed and reopened: safe for any byte string.
std::string shell_quote(const std::string& text);

}  // namespace riseml
