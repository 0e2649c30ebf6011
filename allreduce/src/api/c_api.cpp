// The C interface: a thin shell over Communicator that catches everything.
#include <riseml/allreduce.h>
#include <riseml/communicator.hpp>

#include <memory>
#include <new>
#include <string>

struct riseml_comm {
  std::unique_ptr<riseml::Communicator> communicator;
};

namespace {

thread_local std::string last_error;
thread_local int last_error_rank = -1;

// Adapts the caller's C rendezvous to the C++ interface.
class CRendezvous : public riseml::Rendezvous {
 public:
  explicit CRendezvous(const riseml_rendezvous& r) : r_(r) {}
  int rank() const override { return r_.rank; }
  int size() const override { return r_.size; }
  void put(std::string_view key, const std::vector<std::byte>& value) override {
    if (r_.put(r_.user, std::string(key).c_str(), value.data(), value.size()) != 0)
      throw riseml::RendezvousError("put(" + std::string(key) + ") failed");
  }
  void fence(std::chrono::milliseconds timeout) override {
    if (r_.fence(r_.user, static_cast<long>(timeout.count())) != 0)
      throw riseml::RendezvousError("fence failed");
  }
  std::vector<std::byte> get(int rank, std::string_view key,
                             std::chrono::milliseconds timeout) override {
    std::vector<std::byte> v(256);
    for (;;) {
      std::size_t len = 0;
      if (r_.get(r_.user, rank, std::string(key).c_str(), v.data(), v.size(), &len,
                 static_cast<long>(timeout.count())) != 0)
        throw riseml::RendezvousError("get(" + std::string(key) + ") from rank " +
                                      std::to_string(rank) + " failed");
      if (len <= v.size()) {
        v.resize(len);
        return v;
      }
      v.resize(len);
    }
  }
  std::vector<std::byte> job_secret() override {
    std::vector<std::byte> v(256);
    std::size_t len = 0;
    if (r_.job_secret == nullptr || r_.job_secret(r_.user, v.data(), v.size(), &len) != 0 ||
        len > v.size())
      throw riseml::RendezvousError("job_secret failed");
    v.resize(len);
    return v;
  }

 private:
  riseml_rendezvous r_;
};

riseml_status status_of(riseml::ErrorKind k) {
  using riseml::ErrorKind;
  switch (k) {
    case ErrorKind::invalid_argument: return RISEML_ERR_INVALID_ARGUMENT;
    case ErrorKind::mismatch: return RISEML_ERR_MISMATCH;
    case ErrorKind::peer_failed: return RISEML_ERR_PEER_FAILED;
    case ErrorKind::timeout: return RISEML_ERR_TIMEOUT;
    case ErrorKind::authentication: return RISEML_ERR_AUTHENTICATION;
    case ErrorKind::setup: return RISEML_ERR_SETUP;
    case ErrorKind::system: return RISEML_ERR_SYSTEM;
    case ErrorKind::aborted: return RISEML_ERR_ABORTED;
  }
  return RISEML_ERR_INTERNAL;
}

template <class F>
riseml_status guarded(F&& f) {
  try {
    f();
    return RISEML_OK;
  } catch (const riseml::CollectiveError& e) {
    last_error = e.what();
    last_error_rank = e.culprit_rank();
    return status_of(e.kind());
  } catch (const std::bad_alloc&) {
    last_error = "out of memory";
    last_error_rank = -1;
    return RISEML_ERR_SYSTEM;
  } catch (const std::exception& e) {
    last_error = e.what();
    last_error_rank = -1;
    return RISEML_ERR_INTERNAL;
  } catch (...) {
    last_error = "unknown error";
    last_error_rank = -1;
    return RISEML_ERR_INTERNAL;
  }
}

// The C values are the DataType values (checked below), so a cast maps them.
bool valid_type(riseml_datatype t) { return t >= RISEML_FLOAT32 && t <= RISEML_BOOL; }
static_assert(RISEML_UINT8 == static_cast<int>(riseml::DataType::uint8) &&
              RISEML_INT8 == static_cast<int>(riseml::DataType::int8) &&
              RISEML_INT16 == static_cast<int>(riseml::DataType::int16) &&
              RISEML_BOOL == static_cast<int>(riseml::DataType::boolean));
bool valid_op(riseml_reduce_op o) { return o >= RISEML_SUM && o <= RISEML_PRODUCT; }

riseml_status invalid(const char* what) {
  last_error = what;
  last_error_rank = -1;
  return RISEML_ERR_INVALID_ARGUMENT;
}

}  // namespace

extern "C" {

riseml_status riseml_comm_create(const riseml_rendezvous* rendezvous, riseml_comm** comm) {
  if (rendezvous == nullptr || comm == nullptr || rendezvous->put == nullptr ||
      rendezvous->fence == nullptr || rendezvous->get == nullptr)
    return invalid("riseml_comm_create: null argument");
  *comm = nullptr;
  return guarded([&] {
    CRendezvous r(*rendezvous);
    auto c = std::make_unique<riseml_comm>();
    c->communicator = std::make_unique<riseml::Communicator>(
        r, riseml::CommunicatorOptions::from_environment());
    *comm = c.release();
  });
}

void riseml_comm_destroy(riseml_comm* comm) { delete comm; }

int riseml_comm_rank(const riseml_comm* comm) { return comm ? comm->communicator->rank() : -1; }
int riseml_comm_size(const riseml_comm* comm) { return comm ? comm->communicator->size() : -1; }

riseml_status riseml_allreduce(riseml_comm* comm, const void* in, void* out, size_t count,
                               riseml_datatype type, riseml_reduce_op op) {
  if (!comm || !valid_type(type) || !valid_op(op)) return invalid("riseml_allreduce: bad argument");
  return guarded([&] {
    comm->communicator->allreduce(in, out, count, static_cast<riseml::DataType>(type),
                                  static_cast<riseml::ReduceOp>(op));
  });
}

riseml_status riseml_broadcast(riseml_comm* comm, void* buffer, size_t count,
                               riseml_datatype type, int root) {
  if (!comm || !valid_type(type)) return invalid("riseml_broadcast: bad argument");
  return guarded([&] {
    comm->communicator->broadcast(buffer, count, static_cast<riseml::DataType>(type), root);
  });
}

riseml_status riseml_allgather(riseml_comm* comm, const void* in, void* out, size_t count,
                               riseml_datatype type) {
  if (!comm || !valid_type(type)) return invalid("riseml_allgather: bad argument");
  return guarded([&] {
    comm->communicator->allgather(in, out, count, static_cast<riseml::DataType>(type));
  });
}

riseml_status riseml_allgatherv(riseml_comm* comm, const void* in, void* out,
                                const size_t* counts, riseml_datatype type) {
  if (!comm || !counts || !valid_type(type)) return invalid("riseml_allgatherv: bad argument");
  return guarded([&] {
    comm->communicator->allgatherv(
        in, out, std::span(counts, static_cast<std::size_t>(comm->communicator->size())),
        static_cast<riseml::DataType>(type));
  });
}

riseml_status riseml_reduce_scatter(riseml_comm* comm, const void* in, void* out, size_t count,
                                    riseml_datatype type, riseml_reduce_op op) {
  if (!comm || !valid_type(type) || !valid_op(op))
    return invalid("riseml_reduce_scatter: bad argument");
  return guarded([&] {
    comm->communicator->reduce_scatter(in, out, count, static_cast<riseml::DataType>(type),
                                       static_cast<riseml::ReduceOp>(op));
  });
}

riseml_status riseml_reduce_scatterv(riseml_comm* comm, const void* in, void* out,
                                     const size_t* counts, riseml_datatype type,
                                     riseml_reduce_op op) {
  if (!comm || !counts || !valid_type(type) || !valid_op(op))
    return invalid("riseml_reduce_scatterv: bad argument");
  return guarded([&] {
    comm->communicator->reduce_scatterv(
        in, out, std::span(counts, static_cast<std::size_t>(comm->communicator->size())),
        static_cast<riseml::DataType>(type), static_cast<riseml::ReduceOp>(op));
  });
}

riseml_status riseml_alltoall(riseml_comm* comm, const void* in, void* out, size_t count,
                              riseml_datatype type) {
  if (!comm || !valid_type(type)) return invalid("riseml_alltoall: bad argument");
  return guarded([&] {
    comm->communicator->alltoall(in, out, count, static_cast<riseml::DataType>(type));
  });
}

riseml_status riseml_alltoallv(riseml_comm* comm, const void* in, const size_t* send_counts,
                               void* out, const size_t* recv_counts, riseml_datatype type) {
  if (!comm || !send_counts || !recv_counts || !valid_type(type))
    return invalid("riseml_alltoallv: bad argument");
  return guarded([&] {
    const auto n = static_cast<std::size_t>(comm->communicator->size());
    comm->communicator->alltoallv(in, std::span(send_counts, n), out, std::span(recv_counts, n),
                                  static_cast<riseml::DataType>(type));
  });
}

riseml_status riseml_adasum_allreduce(riseml_comm* comm, const void* in, void* out,
                                      const size_t* tensor_counts, size_t tensors,
                                      riseml_datatype type) {
  if (!comm || (tensors && !tensor_counts) || !valid_type(type))
    return invalid("riseml_adasum_allreduce: bad argument");
  return guarded([&] {
    comm->communicator->adasum_allreduce(in, out, std::span(tensor_counts, tensors),
                                         static_cast<riseml::DataType>(type));
  });
}

riseml_status riseml_barrier(riseml_comm* comm) {
  if (!comm) return invalid("riseml_barrier: null communicator");
  return guarded([&] { comm->communicator->barrier(); });
}

const char* riseml_last_error(void) { return last_error.c_str(); }
int riseml_last_error_rank(void) { return last_error_rank; }

const char* riseml_status_name(riseml_status s) {
  switch (s) {
    case RISEML_OK: return "ok";
    case RISEML_ERR_INVALID_ARGUMENT: return "invalid argument";
    case RISEML_ERR_MISMATCH: return "mismatch";
    case RISEML_ERR_PEER_FAILED: return "peer failed";
    case RISEML_ERR_TIMEOUT: return "timeout";
    case RISEML_ERR_AUTHENTICATION: return "authentication";
    case RISEML_ERR_SETUP: return "setup";
    case RISEML_ERR_SYSTEM: return "system";
    case RISEML_ERR_ABORTED: return "aborted";
    case RISEML_ERR_INTERNAL: return "internal";
  }
  return "unknown";
}

}  // extern "C"
