// What a message belongs to. Every message carries its sender's tag and the receiver compares
// it with its own, so ranks that disagree on a call (collective, type, op, size, algorithm, or
// a skipped call) are detected at the first message instead of corrupting data or hanging.
#pragma once

#include <cstdint>
#include <string>

namespace riseml {

enum class Collective : std::uint8_t {
  setup, allreduce, broadcast, allgather, reduce_scatter, barrier, reduce_scatterv, alltoall,
  alltoallv, adasum
};

struct CallTag {
  std::uint64_t sequence = 0;  // calls made on the communicator before this one
  std::uint64_t count = 0;     // elements (the total, for allgatherv and reduce_scatterv; 0
                               // for alltoallv, whose counts are checked on their own)
  std::uint32_t root = 0;      // broadcast root; adasum: a hash of the tensor counts; else 0
  Collective collective = Collective::setup;
  std::uint8_t type = 0;       // DataType
  std::uint8_t op = 0;         // ReduceOp
  std::uint8_t algorithm = 0;  // Algorithm

  bool operator==(const CallTag&) const = default;
};
static_assert(sizeof(CallTag) == 24);

std::string describe(const CallTag& tag);

}  // namespace riseml
