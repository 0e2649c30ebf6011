// Open MPI on MPI_COMM_WORLD (needs a run under mpirun): MPI_Allreduce, MPI_Reduce_scatter_block
// or MPI_Alltoall.
#pragma once

#include <memory>

#include "bench_options.hpp"
#include "contender.hpp"

namespace riseml::bench {

std::unique_ptr<Contender> make_mpi_contender(BenchCollective collective, DataType type,
                                              ReduceOp op, int ranks);

}  // namespace riseml::bench
