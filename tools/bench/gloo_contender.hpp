// Gloo's ring-chunked allreduce over its TCP transport (loopback on one host). Its full mesh
// rendezvous goes through a gloo FileStore in a directory rank 0 creates (so all ranks must
// share a filesystem: one host).
#pragma once

#include <riseml/communicator.hpp>

#include <memory>

#include "bench_options.hpp"
#include "contender.hpp"

namespace riseml::bench {

// allreduce: AllreduceRingChunked (in place); alltoall: gloo::alltoall. Gloo's reduce-scatter
// (in place, halving-doubling over a different block layout) is not wired in.
std::unique_ptr<Contender> make_gloo_contender(Communicator& comm, BenchCollective collective,
                                               DataType type, ReduceOp op);

}  // namespace riseml::bench
