#include "mpi_contender.hpp"

#include <mpi.h>

#include <stdexcept>

namespace riseml::bench {

namespace {

class MpiContender : public Contender {
 public:
  MpiContender(DataType type, ReduceOp op) : type_(type), op_(op) {}
  std::string name() const override { return "mpi"; }
  std::string description() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, static_cast<std::size_t>(len));
    if (auto nl = v.find_first_of(",\n"); nl != std::string::npos) v.resize(nl);
    return "mpi: MPI_Allreduce, " + v;
  }
  bool supports(DataType t, ReduceOp op) const override {
    return mpi_type(t) != MPI_DATATYPE_NULL && op != ReduceOp::average;
  }
  void run(const void* in, void* out, std::size_t count) override {
    MPI_Allreduce(in, out, static_cast<int>(count), mpi_type(type_), mpi_op(op_), MPI_COMM_WORLD);
  }
  void run_in_place(void* buffer, std::size_t count) override {
    MPI_Allreduce(MPI_IN_PLACE, buffer, static_cast<int>(count), mpi_type(type_), mpi_op(op_),
                  MPI_COMM_WORLD);
  }

 private:
  static MPI_Datatype mpi_type(DataType t) {
    switch (t) {
      case DataType::float32: return MPI_FLOAT;
      case DataType::float64: return MPI_DOUBLE;
      case DataType::int32: return MPI_INT32_T;
      case DataType::int64: return MPI_INT64_T;
      case DataType::uint8: return MPI_UINT8_T;
      default: return MPI_DATATYPE_NULL;
    }
  }
  static MPI_Op mpi_op(ReduceOp op) {
    switch (op) {
      case ReduceOp::min: return MPI_MIN;
      case ReduceOp::max: return MPI_MAX;
      case ReduceOp::product: return MPI_PROD;
      default: return MPI_SUM;
    }
  }
  DataType type_;
  ReduceOp op_;
};

}  // namespace

std::unique_ptr<Contender> make_mpi_contender(DataType type, ReduceOp op) {
  return std::make_unique<MpiContender>(type, op);
}

}  // namespace riseml::bench
