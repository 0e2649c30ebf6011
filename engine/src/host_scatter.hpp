// The host collectives whose results differ in shape per rank: allgather (grouped: several
// tensors in one allgatherv), reducescatter (grouped: one reduce_scatterv) and alltoall. Their
// metadata was checked by check_agreement; a joined rank never gets here (only allreduces go on
// then). Each returns the bytes it moved, for the timeline; the results of allgather and
// alltoall go to `mine`'s handle.
#pragma once

#include "strategy.hpp"

#include <cstddef>
#include <vector>

namespace riseml::engine {

std::size_t host_allgather(const ExecutionContext& context, const TableEntry& entry,
                           LocalRequest* mine);
// Packs through `fusion_buffer` when grouped or prescaled.
std::size_t host_reducescatter(const ExecutionContext& context, const TableEntry& entry,
                               LocalRequest* mine, std::vector<std::byte>& fusion_buffer);
std::size_t host_alltoall(const ExecutionContext& context, const TableEntry& entry,
                          LocalRequest* mine);

}  // namespace riseml::engine
