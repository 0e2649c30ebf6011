#include "naming.hpp"

namespace riseml::engine {

std::string_view kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::allreduce: return "allreduce";
    case OpKind::broadcast: return "broadcast";
    case OpKind::allgather: return "allgather";
    case OpKind::barrier: return "barrier";
    case OpKind::join: return "join";
    case OpKind::reducescatter: return "reducescatter";
    case OpKind::alltoall: return "alltoall";
  }
  return "?";
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(ranks[i]);
  }
  return s;
}

}  // namespace riseml::engine
