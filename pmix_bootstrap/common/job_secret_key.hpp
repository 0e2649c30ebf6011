// Where the job secret lives in PMIx: a launcher that knows it stores it as job-level data under
// this key; otherwise rank 0 puts it under the same key. Shared by riseml-launch and the client.
#pragma once

#include <cstddef>

namespace riseml::pmix {

inline constexpr const char* kJobSecretKey = "riseml.job_secret";
inline constexpr std::size_t kJobSecretBytes = 32;

}  // namespace riseml::pmix
