#include "request_check.hpp"

#include "naming.hpp"
#include "scaling.hpp"
#include "wire.hpp"

#include <string>

namespace riseml::engine {

void apply_equal_split(Request& request, int rank, int size) {
  if (request.kind != OpKind::alltoall || !request.splits.empty() || request.tensors.size() != 1 ||
      request.tensors[0].shape.empty())
    return;
  const std::int64_t rows = request.tensors[0].shape[0];
  if (rows % size != 0)
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml: alltoall '" + request.name + "' on rank " + std::to_string(rank) +
                              ": the first dimension " + std::to_string(rows) +
                              " does not split evenly over " + std::to_string(size) +
                              " ranks; pass splits");
  request.splits.assign(static_cast<std::size_t>(size), rows / size);
}

std::string device_refusal(OpKind kind, DataType type, bool adasum) {
  switch (kind) {
    case OpKind::allreduce:
    case OpKind::reducescatter:
      if (adasum) return "Adasum of GPU tensors is not supported; reduce host tensors";
      if (type == DataType::int16 || type == DataType::boolean)
        return "a reduction of " + std::string(to_string(type)) +
               " GPU tensors is not supported (NCCL has no such type); reduce a host tensor "
               "or cast to int32 / uint8";
      return "";
    case OpKind::alltoall:
    case OpKind::broadcast:
    case OpKind::allgather:
    case OpKind::barrier:
    case OpKind::join:
      return "";
  }
  return "";
}

void check_request(const Request& r, int rank, int size) {
  auto bad = [&](const std::string& what) {
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml: " + std::string(kind_name(r.kind)) + " '" + r.name +
                              "' on rank " + std::to_string(rank) + ": " + what);
  };
  switch (r.kind) {
    case OpKind::allreduce:
      if (r.tensors.empty()) bad("no tensors given");
      if (r.adasum && !is_floating_point(r.dtype))
        bad("Adasum needs floating point tensors, not " + std::string(to_string(r.dtype)));
      break;
    case OpKind::reducescatter:
      if (r.tensors.empty()) bad("no tensors given");
      for (const TensorArg& t : r.tensors)
        if (t.shape.empty()) bad("a scalar cannot be scattered (needs a first dimension)");
      break;
    case OpKind::alltoall: {
      if (r.tensors.size() != 1) bad("exactly one tensor expected");
      const auto& shape = r.tensors[0].shape;
      if (shape.empty()) bad("a scalar cannot be sent in parts (needs a first dimension)");
      if (r.splits.size() != static_cast<std::size_t>(size))
        bad("splits has " + std::to_string(r.splits.size()) + " entries for " +
            std::to_string(size) + " ranks");
      std::int64_t rows = 0;
      for (std::int64_t v : r.splits) {
        if (v < 0) bad("negative split " + std::to_string(v));
        rows += v;
      }
      if (rows != shape[0])
        bad("splits sum to " + std::to_string(rows) + " rows, but the tensor's first dimension is " +
            std::to_string(shape[0]));
      break;
    }
    case OpKind::broadcast:
      if (r.tensors.size() != 1) bad("exactly one tensor expected");
      if (r.root < 0 || r.root >= size)
        bad("root rank " + std::to_string(r.root) + " is not in [0, " + std::to_string(size) + ")");
      break;
    case OpKind::allgather:
      if (r.tensors.empty()) bad("no tensors given");
      for (const TensorArg& t : r.tensors)
        if (t.shape.empty()) bad("a scalar cannot be gathered (needs a first dimension)");
      break;
    case OpKind::barrier:
    case OpKind::join: return;
  }
  if (r.name.empty()) bad("a name is required");
  if (!r.tensors.empty() && r.tensors.front().device >= 0)
    if (std::string why = device_refusal(r.kind, r.dtype, r.adasum); !why.empty()) bad(why);
  for (const TensorArg& t : r.tensors) {
    if (t.device != r.tensors.front().device)
      bad("tensors on different devices (" + std::to_string(r.tensors.front().device) + " and " +
          std::to_string(t.device) + "; -1 is host memory); move them to one device");
    for (std::int64_t d : t.shape)
      if (d < 0) bad("negative dimension in shape " + describe_shape(t.shape));
    if (element_count(t.shape) == 0) continue;
    if (t.input == nullptr) bad("null input buffer");
    if (r.kind != OpKind::allgather && r.kind != OpKind::alltoall && r.kind != OpKind::reducescatter &&
        t.output == nullptr)
      bad("null output buffer");
  }
  if (r.kind == OpKind::reducescatter) {
    for (const TensorArg& t : r.tensors) {
      const std::int64_t mine = reducescatter_rows(t.shape[0], size, rank);
      if (mine > 0 && element_count(t.shape) > 0 && t.output == nullptr) bad("null output buffer");
    }
  }
}

}  // namespace riseml::engine
