// Human-readable PMIx status codes for error messages.
#pragma once

#include <pmix_common.h>

#include <string>

namespace riseml::pmix {

// "TIMEOUT (PMIx status -24)": PMIx's own name plus the number, which is what one searches for.
std::string describe_status(pmix_status_t status);

}  // namespace riseml::pmix
