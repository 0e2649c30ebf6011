// This machine's name, for the error messages of the GPU parts.
#pragma once

#include <unistd.h>

#include <string>

namespace riseml::cuda {

inline std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown host";
  return buf;
}

}  // namespace riseml::cuda
