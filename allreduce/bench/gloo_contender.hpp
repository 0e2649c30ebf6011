// Gloo's ring-chunked allreduce over its TCP transport (loopback on one host). Its full mesh
// rendezvous goes through a gloo FileStore in a directory rank 0 creates (so all ranks must
// share a filesystem: one host).
#pragma once

#include <riseml/communicator.hpp>

#include <memory>

#include "contender.hpp"

namespace riseml::bench {

std::unique_ptr<Contender> make_gloo_contender(Communicator& comm, DataType type, ReduceOp op);

}  // namespace riseml::bench
