// riseml-bench's command line.
#pragma once

#include <riseml/communicator.hpp>
#include <riseml/datatype.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace riseml::bench {

struct BenchOptions {
  std::vector<std::size_t> sizes{4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20};
  DataType type = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  Algorithm algorithm = Algorithm::automatic;
  bool mpi = false, gloo = false;   // --peers mpi,gloo
  int rounds = 3;                   // alternating rounds per size; the best round is reported
  double round_seconds = 0.15;      // target duration of one round of one implementation
  std::string plot;                 // --plot FILE.png
  std::string csv;                  // --csv FILE.csv
};

// Parses argv; prints usage and exits on --help or a bad argument.
BenchOptions parse_bench_options(int argc, char** argv);

// "4K" -> 4096, "16M" -> 16 MiB, "1G", or plain bytes.
std::size_t parse_size(const std::string& text);

}  // namespace riseml::bench
