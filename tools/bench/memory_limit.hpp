// The memory-bound limit of an allreduce on this machine, measured: every rank at once runs
// the memory traffic an ideal allreduce of S bytes must cause on it, and nothing else: add two
// blocks of S(n-1)/n bytes into a third (the reduce-scatter half) and copy a block of
// S(n-1)/n bytes (the allgather half). Its busbw (S * 2(n-1)/n / time) is what no allreduce
// that moves data through this machine's memory can beat; results read as a fraction of it.
#pragma once

#include <riseml/communicator.hpp>

#include <cstddef>
#include <vector>

namespace riseml::bench {

class MemoryLimit {
 public:
  MemoryLimit(DataType type, std::size_t max_bytes, int ranks);
  // Seconds per allreduce-worth of traffic for `bytes`, slowest rank, back to back.
  double seconds(Communicator& comm, std::size_t bytes, int iterations);

 private:
  DataType type_;
  int ranks_;
  std::vector<std::byte> a_, b_, sum_, from_, to_;
};

}  // namespace riseml::bench
