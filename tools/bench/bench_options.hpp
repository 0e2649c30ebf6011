// riseml-bench's command line.
#pragma once

#include <riseml/communicator.hpp>
#include <riseml/datatype.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace riseml::bench {

// What is timed. Sizes are each rank's whole input (reduce-scatter: all blocks; all-to-all:
// the blocks for every rank), rounded down to whole elements per rank, as nccl-tests does.
enum class BenchCollective { allreduce, reduce_scatter, alltoall };
const char* to_string(BenchCollective c);

struct BenchOptions {
  std::vector<std::size_t> sizes{4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20};
  DataType type = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  Algorithm algorithm = Algorithm::automatic;
  // --collective allreduce|reduce_scatter|alltoall|all: one sweep (and report) each, in order.
  std::vector<BenchCollective> collectives{BenchCollective::allreduce};
  bool mpi = false, gloo = false;  // --peers mpi,gloo
  // --modes: back-to-back (nccl-tests: iterations in a row, out of place and in place) and/or
  // per-call (barrier, one call, slowest rank).
  bool back_to_back = true, per_call = true;
  int rounds = 3;              // whole sweeps; medians over rounds, with the spread
  double round_seconds = 0.1;  // back-to-back: target time of one timed loop
  int calls = 100;             // per-call: calls per size over all rounds (at least 5 a round)
  bool limit = false;          // --limit: the memory-bound busbw row
  bool wait_stats = false;     // --wait-stats: how our ranks waited (yields, sleeps) per call
  // --precondition NxSIZE: N of our allreduces of SIZE before the sweep (the state a long
  // training job is in).
  int precondition_calls = 0;
  std::size_t precondition_bytes = 0;
  std::string plot;  // --plot FILE.png
  std::string csv;   // --csv FILE.csv
  // --fit FILE: instead of the sweep, measure the step model's link parameters and write them
  // as a site file's network: section (link_fit.hpp).
  std::string fit;
};

// Parses argv; prints usage and exits on --help or a bad argument.
BenchOptions parse_bench_options(int argc, char** argv);

// "4K" -> 4096, "16M" -> 16 MiB, "1G", or plain bytes.
std::size_t parse_size(const std::string& text);

}  // namespace riseml::bench
