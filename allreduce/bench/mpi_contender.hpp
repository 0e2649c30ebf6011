// Open MPI's MPI_Allreduce on MPI_COMM_WORLD (needs a run under mpirun).
#pragma once

#include <memory>

#include "contender.hpp"

namespace riseml::bench {

std::unique_ptr<Contender> make_mpi_contender(DataType type, ReduceOp op);

}  // namespace riseml::bench
