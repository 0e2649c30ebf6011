// The allreduce of host tensors: one tensor is reduced in place on the caller's buffer (no
// copy); several are packed into the fusion buffer (prescaled on the way in), reduced as one,
// and unpacked (postscaled on the way out). A rank that joined contributes zeros.
#pragma once

#include "strategy.hpp"

#include <cstddef>
#include <vector>

namespace riseml::engine {

// Writes each entry's MEMCPY_IN_FUSION_BUFFER, ALLREDUCE, MEMCPY_OUT_FUSION_BUFFER events and
// finishes it. `fusion_buffer` grows to the bucket's bytes and is kept for the next.
void host_allreduce(const ExecutionContext& context, const std::vector<TableEntry*>& bucket,
                    std::chrono::steady_clock::time_point start,
                    std::vector<std::byte>& fusion_buffer);

}  // namespace riseml::engine
