#include <riseml/cuda/nccl_communicator.hpp>

#include <nccl.h>

#include "host_name.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

extern char** environ;

namespace riseml::cuda {
namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t to_nccl(DataType t) {
  switch (t) {
    case DataType::float32: return ncclFloat32;
    case DataType::float64: return ncclFloat64;
    case DataType::float16: return ncclFloat16;
    case DataType::bfloat16: return ncclBfloat16;
    case DataType::int32: return ncclInt32;
    case DataType::int64: return ncclInt64;
    case DataType::uint8: return ncclUint8;
    case DataType::int8: return ncclInt8;
    case DataType::int16:
    case DataType::boolean:
      // NCCL has no 16-bit integer and no boolean type (uint8 max/min would do for bool, but
      // its sum would not be an or).
      throw CollectiveError(ErrorKind::invalid_argument,
                            "riseml nccl: GPU collectives do not support " +
                                std::string(to_string(t)) + " (NCCL has no such type); use a "
                                "host tensor or another type");
  }
  throw CollectiveError(ErrorKind::invalid_argument, "riseml nccl: unknown data type");
}

bool is_float(DataType t) {
  return t == DataType::float32 || t == DataType::float64 || is_half_precision(t);
}

ncclRedOp_t to_nccl(ReduceOp op, DataType t) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::product: return ncclProd;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::average:
      if (!is_float(t))
        throw CollectiveError(ErrorKind::invalid_argument,
                              "riseml nccl: average of " + std::string(to_string(t)) +
                                  " is not supported (use sum, then divide)");
      return ncclAvg;
  }
  throw CollectiveError(ErrorKind::invalid_argument, "riseml nccl: unknown reduce op");
}

}  // namespace

std::string nccl_environment() {
  std::vector<std::string> vars;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "NCCL_", 5) == 0) vars.emplace_back(*e);
  if (vars.empty()) return "no NCCL_* variables set";
  std::sort(vars.begin(), vars.end());
  std::string out;
  for (const auto& v : vars) out += (out.empty() ? "" : " ") + v;
  return out;
}

constexpr const char* kAbortRequested =
    "aborted by its owner while waiting (a collective before this one failed)";

struct NcclCommunicator::State {
  int rank = 0;
  int size = 0;
  int device = 0;
  std::chrono::milliseconds timeout{};
  std::string host;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t before = nullptr;  // recorded on the caller's stream
  cudaEvent_t after = nullptr;   // recorded on ours
  // Recorded on the caller's stream at the first collective since the last synchronize(): the
  // timeout starts once the caller's own backlog is done, so a busy GPU is not a dead peer.
  cudaEvent_t caller_ready = nullptr;
  bool pending = false;
  bool on_caller_stream = false;  // NcclOptions::on_caller_stream
  bool in_group = false;  // between ncclGroupStart and ncclGroupEnd
  bool failed = false;
  std::string abort_reason;  // why abort() was called, for later calls
  // request_abort() from another thread: the owner's waits end at their next poll.
  std::atomic<bool> abort_requested{false};

  std::string where() const {
    return "rank " + std::to_string(rank) + " of " + std::to_string(size) + " (host " + host +
           ", CUDA device " + std::to_string(device) + ")";
  }

  // Why every call after a failure fails (healthy() says it too).
  std::string failed_earlier() const {
    return "the communicator failed earlier on " + where() +
           (abort_reason.empty() ? "" : ": " + abort_reason);
  }

  [[noreturn]] void fail(ErrorKind kind, const std::string& what) {
    failed = true;
    if (in_group) {  // NCCL's group depth is per thread: close it before giving up
      in_group = false;
      ncclGroupEnd();
    }
    if (comm) {
      ncclCommAbort(comm);
      comm = nullptr;
    }
    throw CollectiveError(kind, "riseml nccl: " + what + " on " + where() + "; " +
                                    nccl_environment());
  }

  void check_cuda(cudaError_t e, const char* what) {
    if (e != cudaSuccess) fail(ErrorKind::system, std::string(what) + ": " + cudaGetErrorString(e));
  }

  std::string nccl_error(ncclResult_t r) const {
    std::string s = ncclGetErrorString(r);
    const char* last = comm ? ncclGetLastError(comm) : ncclGetLastError(nullptr);
    if (last && *last) s += std::string(" (") + last + ")";
    return s;
  }

  // Polls the communicator's asynchronous state until it is not ncclInProgress, at most until
  // `deadline`; on an error or a timeout aborts and throws.
  void wait_ready(const char* what, Clock::time_point deadline,
                  ErrorKind on_error = ErrorKind::peer_failed) {
    for (;;) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t r = ncclCommGetAsyncError(comm, &state);
      if (r != ncclSuccess) fail(on_error, std::string(what) + ": " + nccl_error(r));
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) fail(on_error, std::string(what) + ": " + nccl_error(state));
      if (abort_requested) fail(ErrorKind::aborted, std::string(what) + ": " + kAbortRequested);
      if (Clock::now() >= deadline)
        fail(ErrorKind::timeout, std::string(what) + ": no progress within " +
                                     std::to_string(timeout.count()) + " ms (a peer dead?)");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  // Runs an enqueue call; a non-blocking communicator may answer ncclInProgress.
  void enqueue(ncclResult_t r, const char* what) {
    if (r == ncclInProgress) {
      wait_ready(what, Clock::now() + timeout);
    } else if (r != ncclSuccess) {
      fail(r == ncclInvalidArgument || r == ncclInvalidUsage ? ErrorKind::invalid_argument
                                                             : ErrorKind::peer_failed,
           std::string(what) + ": " + nccl_error(r));
    }
  }

  void begin(cudaStream_t caller) {
    if (failed)
      throw CollectiveError(ErrorKind::aborted, "riseml nccl: " + failed_earlier());
    if (abort_requested) fail(ErrorKind::aborted, kAbortRequested);
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    if (on_caller_stream) return;
    if (!pending) {
      check_cuda(cudaEventRecord(caller_ready, caller), "cudaEventRecord");
      pending = true;
    }
    check_cuda(cudaEventRecord(before, caller), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(stream, before, 0), "cudaStreamWaitEvent");
  }

  // Where the collective runs: our stream, or the caller's (on_caller_stream).
  cudaStream_t on(cudaStream_t caller) const { return on_caller_stream ? caller : stream; }

  void end(cudaStream_t caller) {
    if (on_caller_stream) return;
    check_cuda(cudaEventRecord(after, stream), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(caller, after, 0), "cudaStreamWaitEvent");
  }
};

NcclId make_nccl_id() {
  ncclUniqueId id{};
  const ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess)
    throw CollectiveError(ErrorKind::setup, "riseml nccl: ncclGetUniqueId on host " + host_name() +
                                                ": " + ncclGetErrorString(r) + "; " +
                                                nccl_environment());
  static_assert(sizeof id == sizeof(NcclId));
  NcclId bytes;
  std::memcpy(bytes.data(), &id, sizeof id);
  return bytes;
}

namespace {

NcclId share_id_over(Rendezvous& rendezvous, const NcclOptions& options) {
  const std::string key = options.rendezvous_prefix + ".nccl_unique_id";
  const std::string where = "rank " + std::to_string(rendezvous.rank()) + " (host " + host_name() +
                            ")";
  NcclId id{};
  try {
    if (rendezvous.rank() == 0) {
      id = make_nccl_id();
      rendezvous.put(key, std::vector<std::byte>(id.begin(), id.end()));
    }
    rendezvous.fence(options.timeout);
    const std::vector<std::byte> bytes = rendezvous.get(0, key, options.timeout);
    if (bytes.size() != id.size())
      throw CollectiveError(ErrorKind::setup,
                            "riseml nccl: the NCCL unique id from rank 0 has " +
                                std::to_string(bytes.size()) + " bytes, not " +
                                std::to_string(id.size()) + " on " + where);
    std::memcpy(id.data(), bytes.data(), id.size());
  } catch (const RendezvousError& e) {
    throw CollectiveError(ErrorKind::setup, std::string("riseml nccl: sharing the NCCL unique id on ") +
                                                where + ": " + e.what());
  }
  return id;
}

}  // namespace

NcclCommunicator::NcclCommunicator(Rendezvous& rendezvous, const NcclOptions& options)
    : NcclCommunicator(share_id_over(rendezvous, options), rendezvous.rank(), rendezvous.size(),
                       options) {}

NcclCommunicator::NcclCommunicator(const NcclId& id_bytes, int rank, int size,
                                   const NcclOptions& options)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.rank = rank;
  s.size = size;
  s.timeout = options.timeout;
  s.on_caller_stream = options.on_caller_stream;
  s.host = host_name();
  if (options.device >= 0) {
    s.device = options.device;
  } else if (cudaGetDevice(&s.device) != cudaSuccess) {
    s.device = -1;
  }
  const auto deadline = Clock::now() + options.timeout;
  s.check_cuda(cudaSetDevice(s.device), "cudaSetDevice");

  ncclUniqueId id{};
  std::memcpy(&id, id_bytes.data(), sizeof id);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ncclResult_t r = ncclCommInitRankConfig(&s.comm, s.size, id, s.rank, &config);
  if (r != ncclSuccess && r != ncclInProgress)
    s.fail(ErrorKind::setup, "ncclCommInitRankConfig: " + s.nccl_error(r));
  s.wait_ready("ncclCommInitRankConfig", deadline, ErrorKind::setup);

  s.check_cuda(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  s.check_cuda(cudaEventCreateWithFlags(&s.before, cudaEventDisableTiming), "cudaEventCreate");
  s.check_cuda(cudaEventCreateWithFlags(&s.after, cudaEventDisableTiming), "cudaEventCreate");
  s.check_cuda(cudaEventCreateWithFlags(&s.caller_ready, cudaEventDisableTiming),
               "cudaEventCreate");
}

NcclCommunicator::~NcclCommunicator() {
  State& s = *state_;
  cudaSetDevice(s.device);
  if (s.comm && !s.failed) {
    try {
      synchronize();  // bounded by the timeout; aborts the communicator on failure
    } catch (const CollectiveError&) {
    }
  }
  if (s.comm) {
    // Finalize flushes NCCL's own work; bounded too, else abort.
    ncclResult_t state = ncclCommFinalize(s.comm);
    const auto deadline = Clock::now() + s.timeout;
    while (state == ncclInProgress && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      if (ncclCommGetAsyncError(s.comm, &state) != ncclSuccess) break;
    }
    if (state == ncclSuccess)
      ncclCommDestroy(s.comm);
    else
      ncclCommAbort(s.comm);
  }
  if (s.before) cudaEventDestroy(s.before);
  if (s.caller_ready) cudaEventDestroy(s.caller_ready);
  if (s.after) cudaEventDestroy(s.after);
  if (s.stream) cudaStreamDestroy(s.stream);
}

int NcclCommunicator::rank() const { return state_->rank; }
int NcclCommunicator::size() const { return state_->size; }
int NcclCommunicator::device() const { return state_->device; }
cudaStream_t NcclCommunicator::stream() const { return state_->stream; }

void NcclCommunicator::allreduce(const void* in, void* out, std::size_t count, DataType type,
                                 ReduceOp op, cudaStream_t caller) {
  State& s = *state_;
  const ncclRedOp_t nccl_op = to_nccl(op, type);
  s.begin(caller);
  s.enqueue(ncclAllReduce(in, out, count, to_nccl(type), nccl_op, s.comm, s.on(caller)),
            "ncclAllReduce");
  s.end(caller);
}

void NcclCommunicator::broadcast(void* buffer, std::size_t count, DataType type, int root,
                                 cudaStream_t caller) {
  State& s = *state_;
  if (root < 0 || root >= s.size)
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml nccl: broadcast root " + std::to_string(root) +
                              " out of range on " + s.where());
  s.begin(caller);
  s.enqueue(ncclBroadcast(buffer, buffer, count, to_nccl(type), root, s.comm, s.on(caller)),
            "ncclBroadcast");
  s.end(caller);
}

void NcclCommunicator::allgather(const void* in, void* out, std::size_t count, DataType type,
                                 cudaStream_t caller) {
  State& s = *state_;
  s.begin(caller);
  s.enqueue(ncclAllGather(in, out, count, to_nccl(type), s.comm, s.on(caller)), "ncclAllGather");
  s.end(caller);
}

void NcclCommunicator::reduce_scatter(const void* in, void* out, std::size_t count,
                                      DataType type, ReduceOp op, cudaStream_t caller) {
  State& s = *state_;
  const ncclRedOp_t nccl_op = to_nccl(op, type);
  s.begin(caller);
  s.enqueue(ncclReduceScatter(in, out, count, to_nccl(type), nccl_op, s.comm, s.on(caller)),
            "ncclReduceScatter");
  s.end(caller);
}

void NcclCommunicator::allgatherv(const void* in, void* out, std::span<const std::size_t> counts,
                                  DataType type, cudaStream_t caller) {
  State& s = *state_;
  if (counts.size() != static_cast<std::size_t>(s.size))
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml nccl: allgatherv needs one count per rank (" +
                              std::to_string(counts.size()) + " given) on " + s.where());
  const std::size_t esize = element_size(type);
  s.begin(caller);
  s.enqueue(ncclGroupStart(), "ncclGroupStart");
  s.in_group = true;
  std::size_t offset = 0;
  for (int r = 0; r < s.size; ++r) {
    const std::size_t n = counts[static_cast<std::size_t>(r)];
    auto* dst = static_cast<std::byte*>(out) + offset * esize;
    const void* src = r == s.rank ? in : dst;
    if (n)
      s.enqueue(ncclBroadcast(src, dst, n, to_nccl(type), r, s.comm, s.on(caller)), "ncclBroadcast");
    offset += n;
  }
  s.in_group = false;
  s.enqueue(ncclGroupEnd(), "ncclGroupEnd");
  s.end(caller);
}

void NcclCommunicator::alltoallv(const void* in, std::span<const std::size_t> send_counts,
                                 void* out, std::span<const std::size_t> recv_counts,
                                 DataType type, cudaStream_t caller) {
  State& s = *state_;
  if (send_counts.size() != static_cast<std::size_t>(s.size) ||
      recv_counts.size() != static_cast<std::size_t>(s.size))
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml nccl: alltoallv needs one send and one receive count per rank "
                          "on " + s.where());
  // Moves bytes only: the pairs' sends and receives in one group.
  const std::size_t esize = element_size(type);
  std::vector<PeerSend> sends;
  std::vector<PeerReceive> receives;
  std::size_t sent = 0, received = 0;
  for (int r = 0; r < s.size; ++r) {
    const std::size_t ns = send_counts[static_cast<std::size_t>(r)];
    const std::size_t nr = recv_counts[static_cast<std::size_t>(r)];
    sends.push_back({static_cast<const std::byte*>(in) + sent * esize, ns * esize, r});
    receives.push_back({static_cast<std::byte*>(out) + received * esize, nr * esize, r});
    sent += ns;
    received += nr;
  }
  exchange(sends, receives, caller);
}

void NcclCommunicator::exchange(std::span<const PeerSend> sends,
                                std::span<const PeerReceive> receives, cudaStream_t caller) {
  State& s = *state_;
  auto check_peer = [&](int peer, const char* what) {
    if (peer < 0 || peer >= s.size)  // itself too: NCCL pairs a group's send and receive
      throw CollectiveError(ErrorKind::invalid_argument,
                            std::string("riseml nccl: ") + what + " peer " + std::to_string(peer) +
                                " is not a rank of the communicator (0.." +
                                std::to_string(s.size - 1) + ") on " + s.where());
  };
  for (const PeerSend& p : sends) check_peer(p.peer, "send");
  for (const PeerReceive& p : receives) check_peer(p.peer, "receive");
  s.begin(caller);
  s.enqueue(ncclGroupStart(), "ncclGroupStart");
  s.in_group = true;
  for (const PeerSend& p : sends)
    if (p.bytes)
      s.enqueue(ncclSend(p.data, p.bytes, ncclUint8, p.peer, s.comm, s.on(caller)), "ncclSend");
  for (const PeerReceive& p : receives)
    if (p.bytes)
      s.enqueue(ncclRecv(p.data, p.bytes, ncclUint8, p.peer, s.comm, s.on(caller)), "ncclRecv");
  s.in_group = false;
  s.enqueue(ncclGroupEnd(), "ncclGroupEnd");
  s.end(caller);
}

void NcclCommunicator::order_caller_after(cudaStream_t caller) {
  State& s = *state_;
  if (s.on_caller_stream || s.failed) return;
  s.check_cuda(cudaSetDevice(s.device), "cudaSetDevice");
  s.end(caller);
}

void NcclCommunicator::synchronize() {
  State& s = *state_;
  if (s.failed) throw CollectiveError(ErrorKind::aborted, "riseml nccl: " + s.failed_earlier());
  // Polls until `done` says so; an NCCL error (a peer's failure reported to us) always ends the
  // wait, the timeout only when `bounded`.
  auto poll = [&](auto done, const char* what, bool bounded) {
    const auto deadline = Clock::now() + s.timeout;
    for (;;) {
      const cudaError_t e = done();
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady)
        s.fail(ErrorKind::system, std::string(what) + ": " + cudaGetErrorString(e));
      ncclResult_t state = ncclSuccess;
      const ncclResult_t r = ncclCommGetAsyncError(s.comm, &state);
      if (r != ncclSuccess || (state != ncclSuccess && state != ncclInProgress))
        s.fail(ErrorKind::peer_failed,
               "NCCL collective failed: " + s.nccl_error(r != ncclSuccess ? r : state));
      if (s.abort_requested) s.fail(ErrorKind::aborted, kAbortRequested);
      if (bounded && Clock::now() >= deadline)
        s.fail(ErrorKind::timeout, "collective did not complete within " +
                                       std::to_string(s.timeout.count()) + " ms (a peer dead?)");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  };
  // First the caller's own work queued before the collectives (local: no timeout), then the
  // collectives themselves, which only a peer can hold up.
  if (s.pending) poll([&] { return cudaEventQuery(s.caller_ready); }, "cudaEventQuery", false);
  poll([&] { return cudaStreamQuery(s.stream); }, "cudaStreamQuery", true);
  s.pending = false;
}

bool NcclCommunicator::healthy(std::string* why) const {
  const State& s = *state_;
  if (s.failed || s.comm == nullptr) {
    if (why) *why = s.failed_earlier();
    return false;
  }
  ncclResult_t state = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(s.comm, &state);
  if (r == ncclSuccess && (state == ncclSuccess || state == ncclInProgress)) return true;
  if (why)
    *why = "NCCL collective failed: " + s.nccl_error(r != ncclSuccess ? r : state) + " on " +
           s.where() + "; " + nccl_environment();
  return false;
}

void NcclCommunicator::request_abort() { state_->abort_requested = true; }

void NcclCommunicator::abort(const std::string& reason) {
  State& s = *state_;
  s.failed = true;
  s.abort_reason = reason;
  if (s.comm) {
    ncclCommAbort(s.comm);
    s.comm = nullptr;
  }
}

}  // namespace riseml::cuda
