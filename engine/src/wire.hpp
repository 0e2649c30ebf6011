// What ranks tell each other every cycle: one message per rank, gathered by all ranks. A message
// carries flags (shutdown, join), rank 0's stall verdicts, and this rank's newly submitted
// requests, each either in full (name + metadata) or as the id of an identical earlier one in
// the response cache (4 bytes: the steady state of a training loop).
#pragma once

#include <riseml/datatype.hpp>
#include <riseml/engine/engine.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace riseml::engine {

// Everything ranks must agree on about a request (allgather: all but the first dimension).
struct TensorMeta {
  OpKind kind = OpKind::allreduce;
  DataType dtype = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  std::int32_t root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  bool on_device = false;  // GPU memory (which device is each rank's own business)
  bool adasum = false;
  std::vector<std::int64_t> splits;  // alltoall: rows to each rank (each rank its own)
  std::vector<std::vector<std::int64_t>> shapes;  // one per tensor

  bool operator==(const TensorMeta&) const = default;
};

TensorMeta meta_of(const Request& r);
// meta == meta_of(r), without building it (a cached request is compared every step).
bool describes(const TensorMeta& meta, const Request& r);
std::string describe_shape(const std::vector<std::int64_t>& shape);
std::size_t element_count(const std::vector<std::int64_t>& shape);
// The bytes of all of a request's tensors.
std::size_t meta_bytes(const TensorMeta& meta);

struct WireEntry {
  bool cached = false;
  std::uint32_t cache_id = 0;  // when cached
  std::string name;            // when not cached
  TensorMeta meta;             // when not cached
};

struct StallVerdict {
  std::uint64_t seq = 0;  // which entry of that name (the table's sequence number)
  std::string name;
  std::string message;
};

struct Message {
  bool shutdown = false;
  bool leaving = false;  // with shutdown: this rank's process is exiting
  bool join = false;
  bool stuck = false;  // a thread waits on this engine and nothing finished for deadlock_shutdown
  std::vector<StallVerdict> stalled;  // rank 0 only
  std::vector<WireEntry> entries;
};

std::vector<std::byte> encode(const Message& m);
// Throws CollectiveError(mismatch) on a malformed message (a rank running another version).
Message decode(const std::byte* data, std::size_t size, int from_rank);

}  // namespace riseml::engine
