// The checks a request passes on the caller's thread, before the engine sees it: what can be
// told from the request and the job's shape alone (rank, size). Pure, so a malformed request
// fails at enqueue() with the rank and the reason, never later in a collective.
#pragma once

#include <riseml/engine/engine.hpp>

#include <string>

namespace riseml::engine {

// An alltoall without splits gets the equal split; throws CollectiveError(invalid_argument)
// when its first dimension does not divide by `size`.
void apply_equal_split(Request& request, int rank, int size);

// Throws CollectiveError(invalid_argument) naming the operation, the tensor, `rank` and what is
// wrong (no tensors, null buffers, a bad root or splits, ...).
void check_request(const Request& request, int rank, int size);

// What the GPU path cannot do with device tensors of this kind and type (empty: it can).
// Reductions (allreduce, reducescatter) need an NCCL type (no 16-bit integers, no booleans);
// broadcast, allgather and alltoall move bytes and take every type; Adasum of device tensors is
// not supported.
std::string device_refusal(OpKind kind, DataType type, bool adasum);

}  // namespace riseml::engine
