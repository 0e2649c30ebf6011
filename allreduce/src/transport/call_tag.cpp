#include "call_tag.hpp"

#include <riseml/communicator.hpp>
#include <riseml/datatype.hpp>

namespace riseml {

namespace {
const char* collective_name(Collective c) {
  switch (c) {
    case Collective::setup: return "setup";
    case Collective::allreduce: return "allreduce";
    case Collective::broadcast: return "broadcast";
    case Collective::allgather: return "allgather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::barrier: return "barrier";
    case Collective::reduce_scatterv: return "reduce_scatterv";
    case Collective::alltoall: return "alltoall";
    case Collective::alltoallv: return "alltoallv";
    case Collective::adasum: return "adasum allreduce";
  }
  return "?";
}
}  // namespace

std::string describe(const CallTag& t) {
  std::string s = "call #" + std::to_string(t.sequence) + " " + collective_name(t.collective);
  if (t.collective == Collective::barrier || t.collective == Collective::setup) return s;
  s += "(";
  if (t.collective != Collective::alltoallv) s += std::to_string(t.count) + " x ";
  s += std::string(to_string(static_cast<DataType>(t.type)));
  if (t.collective == Collective::allreduce || t.collective == Collective::reduce_scatter ||
      t.collective == Collective::reduce_scatterv)
    s += ", " + std::string(to_string(static_cast<ReduceOp>(t.op)));
  if (t.collective == Collective::allreduce)
    s += ", " + std::string(to_string(static_cast<Algorithm>(t.algorithm)));
  if (t.collective == Collective::broadcast) s += ", root " + std::to_string(t.root);
  return s + ")";
}

}  // namespace riseml
