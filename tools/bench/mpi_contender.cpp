#include "mpi_contender.hpp"

#include <mpi.h>

#include <stdexcept>

namespace riseml::bench {

namespace {

class MpiContender : public Contender {
 public:
  MpiContender(BenchCollective collective, DataType type, ReduceOp op, int ranks)
      : collective_(collective), type_(type), op_(op), ranks_(static_cast<std::size_t>(ranks)) {}
  std::string name() const override { return "mpi"; }
  std::string description() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, static_cast<std::size_t>(len));
    if (auto nl = v.find_first_of(",\n"); nl != std::string::npos) v.resize(nl);
    const char* call = collective_ == BenchCollective::allreduce        ? "MPI_Allreduce"
                       : collective_ == BenchCollective::reduce_scatter ? "MPI_Reduce_scatter_block"
                                                                        : "MPI_Alltoall";
    return std::string("mpi: ") + call + ", " + v;
  }
  bool supports(DataType t, ReduceOp op) const override {
    if (mpi_type(t) == MPI_DATATYPE_NULL) return false;
    return collective_ == BenchCollective::alltoall || op != ReduceOp::average;
  }
  bool in_place() const override { return collective_ == BenchCollective::allreduce; }
  void run(const void* in, void* out, std::size_t count) override {
    switch (collective_) {
      case BenchCollective::allreduce:
        MPI_Allreduce(in, out, static_cast<int>(count), mpi_type(type_), mpi_op(op_, type_),
                      MPI_COMM_WORLD);
        return;
      case BenchCollective::reduce_scatter:
        MPI_Reduce_scatter_block(in, out, static_cast<int>(count / ranks_), mpi_type(type_),
                                 mpi_op(op_, type_), MPI_COMM_WORLD);
        return;
      case BenchCollective::alltoall:
        MPI_Alltoall(in, static_cast<int>(count / ranks_), mpi_type(type_), out,
                     static_cast<int>(count / ranks_), mpi_type(type_), MPI_COMM_WORLD);
        return;
    }
  }
  void run_in_place(void* buffer, std::size_t count) override {
    MPI_Allreduce(MPI_IN_PLACE, buffer, static_cast<int>(count), mpi_type(type_),
                  mpi_op(op_, type_), MPI_COMM_WORLD);
  }

 private:
  static MPI_Datatype mpi_type(DataType t) {
    switch (t) {
      case DataType::float32: return MPI_FLOAT;
      case DataType::float64: return MPI_DOUBLE;
      case DataType::int32: return MPI_INT32_T;
      case DataType::int64: return MPI_INT64_T;
      case DataType::uint8: return MPI_UINT8_T;
      case DataType::int8: return MPI_INT8_T;
      case DataType::int16: return MPI_INT16_T;
      case DataType::boolean: return MPI_UINT8_T;  // 0/1 bytes: or is max, and is min
      default: return MPI_DATATYPE_NULL;
    }
  }
  static MPI_Op mpi_op(ReduceOp op, DataType t) {
    if (t == DataType::boolean)
      return op == ReduceOp::product || op == ReduceOp::min ? MPI_MIN : MPI_MAX;
    switch (op) {
      case ReduceOp::min: return MPI_MIN;
      case ReduceOp::max: return MPI_MAX;
      case ReduceOp::product: return MPI_PROD;
      default: return MPI_SUM;
    }
  }
  BenchCollective collective_;
  DataType type_;
  ReduceOp op_;
  std::size_t ranks_;
};

}  // namespace

std::unique_ptr<Contender> make_mpi_contender(BenchCollective collective, DataType type,
                                              ReduceOp op, int ranks) {
  return std::make_unique<MpiContender>(collective, type, op, ranks);
}

}  // namespace riseml::bench
