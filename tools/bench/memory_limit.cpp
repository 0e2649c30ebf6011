#include "memory_limit.hpp"

#include <cstring>

#include <riseml/reduce_kernels.hpp>
#include "measure.hpp"

namespace riseml::bench {

MemoryLimit::MemoryLimit(DataType type, std::size_t max_bytes, int ranks)
    : type_(type), ranks_(ranks) {
  const std::size_t block = max_bytes + 64;
  // Touched now: no first-touch faults inside the timed loops.
  for (auto* v : {&a_, &b_, &sum_, &from_, &to_}) v->assign(block, std::byte{1});
}

double MemoryLimit::seconds(Communicator& comm, std::size_t bytes, int iterations) {
  const std::size_t esize = element_size(type_);
  const std::size_t count = bytes / esize * static_cast<std::size_t>(ranks_ - 1) / static_cast<std::size_t>(ranks_);
  return time_back_to_back(comm, [&] {
    kernels::reduce(type_, ReduceOp::sum, sum_.data(), a_.data(), b_.data(), count);
    std::memcpy(to_.data(), from_.data(), count * esize);
  }, iterations);
}

}  // namespace riseml::bench
