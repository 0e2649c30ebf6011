#include "gloo_contender.hpp"

#include <gloo/allreduce_ring_chunked.h>
#include <gloo/alltoall.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <riseml/tcp_socket.hpp>

namespace riseml::bench {

namespace {

class GlooContender : public Contender {
 public:
  GlooContender(Communicator& comm, BenchCollective collective, DataType type, ReduceOp op)
      : collective_(collective), type_(type), op_(op) {
    // Rank 0 makes the store directory and tells the others. Gloo's file store needs a folder
    // every rank sees: /tmp on one machine or the testbed (its nodes share the file system),
    // RISEML_BENCH_GLOO_DIR (a shared file system) across real nodes.
    char dir[256] = {};
    if (comm.rank() == 0) {
      const char* base = std::getenv("RISEML_BENCH_GLOO_DIR");
      std::snprintf(dir, sizeof dir, "%s/riseml-bench-gloo-XXXXXX", base && *base ? base : "/tmp");
      if (::mkdtemp(dir) == nullptr)
        throw std::runtime_error(std::string("cannot make Gloo's store folder ") + dir + ": " +
                                 std::strerror(errno) + " (set RISEML_BENCH_GLOO_DIR)");
    }
    comm.broadcast(dir, sizeof dir, DataType::uint8, 0);
    dir_ = dir;
    owner_ = comm.rank() == 0;
    // Where our TCP transport listens (RISEML_IFACE, else the first interface that is up), so
    // across nodes both cross the same links.
    address_ = listen_address(CommunicatorOptions::from_environment().iface);
    gloo::transport::tcp::attr attr;
    attr.hostname = address_;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(dir_);
    auto context = std::make_shared<gloo::rendezvous::Context>(comm.rank(), comm.size());
    context->connectFullMesh(store, device);
    context_ = context;
    comm.barrier();
  }
  ~GlooContender() override {
    if (owner_) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  std::string name() const override { return "gloo"; }
  std::string description() const override {
    return std::string("gloo: ") +
           (alltoall() ? "alltoall" : "AllreduceRingChunked") + " over its tcp transport (" +
           address_ + ")";
  }
  bool supports(DataType t, ReduceOp op) const override {
    if (alltoall()) return true;  // moves bytes
    return op != ReduceOp::average &&
           (t == DataType::float32 || t == DataType::float64 || t == DataType::int32 ||
            t == DataType::int64 || t == DataType::float16);
  }
  bool out_of_place() const override { return alltoall(); }
  bool in_place() const override { return !alltoall(); }

  void prepare(const void*, void* out, std::size_t count) override {
    if (alltoall()) return;
    switch (type_) {
      case DataType::float32: algorithm_ = make<float>(out, count); break;
      case DataType::float64: algorithm_ = make<double>(out, count); break;
      case DataType::int32: algorithm_ = make<std::int32_t>(out, count); break;
      case DataType::int64: algorithm_ = make<std::int64_t>(out, count); break;
      case DataType::float16: algorithm_ = make<gloo::float16>(out, count); break;
      default: algorithm_.reset();
    }
  }
  void run(const void* in, void* out, std::size_t count) override {
    if (!alltoall()) return algorithm_->run();
    // As torch's ProcessGroupGloo does: fresh options (unbound buffers) every call.
    const std::size_t bytes = count * element_size(type_);
    gloo::AlltoallOptions options(context_);
    options.setInput(static_cast<std::uint8_t*>(const_cast<void*>(in)), bytes);
    options.setOutput(static_cast<std::uint8_t*>(out), bytes);
    gloo::alltoall(options);
  }
  void run_in_place(void*, std::size_t) override { algorithm_->run(); }

 private:
  bool alltoall() const { return collective_ == BenchCollective::alltoall; }

  template <class T>
  std::unique_ptr<gloo::Algorithm> make(void* out, std::size_t count) {
    const gloo::ReductionFunction<T>* fn = gloo::ReductionFunction<T>::sum;
    if (op_ == ReduceOp::min) fn = gloo::ReductionFunction<T>::min;
    if (op_ == ReduceOp::max) fn = gloo::ReductionFunction<T>::max;
    if (op_ == ReduceOp::product) fn = gloo::ReductionFunction<T>::product;
    std::vector<T*> ptrs{static_cast<T*>(out)};
    return std::make_unique<gloo::AllreduceRingChunked<T>>(context_, ptrs,
                                                           static_cast<int>(count), fn);
  }

  BenchCollective collective_;
  DataType type_;
  ReduceOp op_;
  std::string dir_, address_;
  bool owner_ = false;
  std::shared_ptr<gloo::Context> context_;
  std::unique_ptr<gloo::Algorithm> algorithm_;
};

}  // namespace

std::unique_ptr<Contender> make_gloo_contender(Communicator& comm, BenchCollective collective,
                                               DataType type, ReduceOp op) {
  return std::make_unique<GlooContender>(comm, collective, type, op);
}

}  // namespace riseml::bench
