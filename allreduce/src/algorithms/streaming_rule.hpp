// When a collective should write its final bytes with non-temporal stores. Such stores skip the
// read-for-ownership of every destination line, which saves a third of the memory traffic of a
// copy that misses the cache; but they also evict the lines, so a call whose buffers fit in the
// last-level cache loses what the caller (or its next call, in place) reads right after.
#pragma once

#include <riseml/communicator.hpp>

#include <cstddef>

namespace riseml {

// `block_bytes`: what one streaming copy would write (at least 4 MiB: below that the setup and
// the final fence cost more than they save). `host_footprint`: the bytes every rank of this host
// touches in this call together (inputs and outputs). Streams when the footprint exceeds half the
// last-level cache (unknown cache size: from 4 MiB blocks on, as before the rule).
// Never when options.streaming_stores is off (RISEML_STREAMING_STORES=0).
bool streaming_pays(const CommunicatorOptions& options, std::size_t block_bytes,
                    std::size_t host_footprint);

}  // namespace riseml
