#include "host_strategy.hpp"

#include "host_allreduce.hpp"
#include "host_scatter.hpp"

#include <cstring>

namespace riseml::engine {

void HostStrategy::allreduce(const std::vector<TableEntry*>& bucket, Clock::time_point start) {
  host_allreduce(context_, bucket, start, fusion_buffer_);
}

std::size_t HostStrategy::run(TableEntry& g, LocalRequest* mine) {
  switch (reference(g).kind) {
    case OpKind::broadcast: return broadcast(g, mine);
    case OpKind::allgather: return host_allgather(context_, g, mine);
    case OpKind::reducescatter: return host_reducescatter(context_, g, mine, fusion_buffer_);
    case OpKind::alltoall: return host_alltoall(context_, g, mine);
    case OpKind::barrier: context_.comm.barrier(); return 0;
    case OpKind::allreduce:
    case OpKind::join: return 0;
  }
  return 0;
}

std::size_t HostStrategy::broadcast(const TableEntry& g, LocalRequest* l) {
  const TensorMeta& m = reference(g);
  const std::size_t n = element_count(m.shapes[0]);
  const std::size_t bytes = n * element_size(m.dtype);
  if (n == 0) return bytes;
  std::vector<std::byte> scratch;
  void* buffer;
  if (l) {
    const TensorArg& t = l->request.tensors[0];
    if (t.input != t.output) std::memcpy(t.output, t.input, bytes);
    buffer = t.output;
  } else {  // joined (unreachable: a joined rank fails the join rule first)
    scratch.resize(bytes);
    buffer = scratch.data();
  }
  context_.comm.broadcast(buffer, n, m.dtype, m.root);
  return bytes;
}

}  // namespace riseml::engine
