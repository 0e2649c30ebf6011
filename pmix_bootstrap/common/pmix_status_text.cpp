#include "pmix_status_text.hpp"

#include <pmix.h>

namespace riseml::pmix {

std::string describe_status(pmix_status_t status) {
  const char* name = PMIx_Error_string(status);
  return std::string(name != nullptr ? name : "unknown") + " (PMIx status " +
         std::to_string(status) + ")";
}

}  // namespace riseml::pmix
