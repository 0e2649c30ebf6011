// The GPU path of the backend (see device_path.hpp): only in a build with RISEML_TORCH_GPU.
// A device op's Work completes once the op is queued (stream-ordered, as torch's nccl backend),
// so a failure the device meets later cannot fail that Work: the watchdog (device_watchdog.hpp)
// times the oldest op on the group's stream and polls NCCL's asynchronous errors; on a failure
// it aborts the NCCL communicator (its kernels end, so no stream waits for ever) and, as torch's
// nccl backend does by default (TORCH_NCCL_ASYNC_ERROR_HANDLING unset, 1 or 3), ends the
// process, since the tensors of the ops already completed may hold garbage; with 0 or 2 the
// process goes on and every later op of the group, and Work::wait, raises the reason.
#include "device_path.hpp"
#include "device_watchdog.hpp"

#include <riseml/collective_error.hpp>
#include <riseml/cuda/event_pool.hpp>
#include <riseml/cuda/gpu_collectives.hpp>
#include <riseml/cuda/gpu_options.hpp>

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace riseml::torch_distributed {

namespace {

// The path's failure, once the watchdog or an op saw one: shared with the tickets, whose
// Work::wait then raises it.
class FailureLatch {
 public:
  // Whether `why` is the first.
  bool set(const std::string& why) {
    std::lock_guard lock(mutex_);
    if (why_) return false;
    why_ = why;
    return true;
  }
  std::optional<std::string> get() const {
    std::lock_guard lock(mutex_);
    return why_;
  }

 private:
  mutable std::mutex mutex_;
  std::optional<std::string> why_;
};

class GpuTicket final : public DeviceTicket {
 public:
  GpuTicket(c10::DeviceIndex device, std::shared_ptr<const FailureLatch> failure)
      : device_(device), failure_(std::move(failure)) {}
  void wait_done() override {
    if (auto why = failure_->get()) throw CollectiveError(ErrorKind::aborted, *why);
    done.block(c10::cuda::getCurrentCUDAStream(device_));
  }
  bool finished() override {
    try {
      return done.query();
    } catch (const std::exception&) {  // a sticky CUDA error: done, and the next op says so
      return true;
    }
  }

  at::cuda::CUDAEvent ready;  // torch's current stream at the call
  at::cuda::CUDAEvent done;   // our stream after the collective

 private:
  c10::DeviceIndex device_;
  std::shared_ptr<const FailureLatch> failure_;
};

// An event's state for the watchdog (from its thread: the device set first).
Progress progress_of(cudaEvent_t event, c10::DeviceIndex device, std::string* why) {
  cudaSetDevice(device);
  const cudaError_t r = cudaEventQuery(event);
  if (r == cudaSuccess) return Progress::done;
  if (r == cudaErrorNotReady) return Progress::pending;
  // The process exits (CUDA unloads) with ops still watched: nothing is left to go wrong.
  if (r == cudaErrorCudartUnloading) return Progress::done;
  *why = std::string("cudaEventQuery: ") + cudaGetErrorString(r);
  return Progress::failed;
}

std::string this_host() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

class OnStream final : public DeviceCollectives {
 public:
  OnStream(cuda::GpuCollectives& gpu, cudaStream_t stream) : gpu_(gpu), stream_(stream) {}
  void allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op) override {
    gpu_.allreduce(buffer, count, type, op, stream_);
  }
  void broadcast(void* buffer, std::size_t count, DataType type, int root) override {
    gpu_.broadcast(buffer, count, type, root, stream_);
  }
  void allgatherv(const void* in, void* out, std::span<const std::size_t> counts,
                  DataType type) override {
    gpu_.allgatherv(in, out, counts, type, stream_);
  }
  void reduce_scatter(const void* in, void* out, std::size_t count, DataType type,
                      ReduceOp op) override {
    gpu_.reduce_scatter(in, out, count, type, op, stream_);
  }
  void alltoallv(const void* in, std::span<const std::size_t> send_counts, void* out,
                 std::span<const std::size_t> recv_counts, DataType type) override {
    gpu_.alltoallv(in, send_counts, out, recv_counts, type, stream_);
  }
  void exchange(std::span<const PeerSend> sends,
                std::span<const PeerReceive> receives) override {
    gpu_.exchange(sends, receives, stream_);
  }

 private:
  cuda::GpuCollectives& gpu_;
  cudaStream_t stream_;
};

class GpuPath final : public DevicePath {
 public:
  GpuPath(Communicator& cpu, c10::Device device, std::chrono::milliseconds timeout, bool teardown)
      : cpu_(cpu),
        device_(device),
        stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index())),
        teardown_(teardown),
        events_(&cuda::EventPool::of(device.index(), cudaEventDisableTiming)) {
    // A group's timeout may be anything torch takes (0, or days): a year at most, so that a
    // deadline never overflows the clock; none (0 or less) waits that long too.
    const std::chrono::milliseconds year = std::chrono::hours(24 * 365);
    if (timeout.count() <= 0 || timeout > year) timeout = year;
    options_ = cuda::GpuOptions::from_environment();
    options_.device = device.index();
    options_.timeout = timeout;
    where_ = "rank " + std::to_string(cpu.rank()) + " of " + std::to_string(cpu.size()) +
             " (host " + this_host() + ", " + device.str() + ")";
    DeviceWatchdogOptions watch;
    watch.timeout = timeout;
    watch.healthy = [this](std::string* why) {
      // Not while an op holds the lock (it may wait on the device): asked again next round.
      std::unique_lock lock(gpu_mutex_, std::try_to_lock);
      return !lock.owns_lock() || !gpu_ || gpu_->healthy(why);
    };
    watch.on_failure = [this](const std::string& why) { fail(why, /*locked=*/false); };
    watchdog_ = std::make_unique<DeviceWatchdog>(std::move(watch));
  }

  ~GpuPath() override {
    // Torch may tear down the group while NCCL work is queued: let it finish first (the
    // watchdog bounds the wait: a dead peer fails it and aborts NCCL), so that the
    // communicator is not destroyed under it.
    watchdog_->drain(options_.timeout + std::chrono::seconds(10));
    watchdog_.reset();
    c10::cuda::CUDAGuard guard(device_);
    std::lock_guard lock(gpu_mutex_);
    gpu_.reset();  // bounded too: its destructor aborts NCCL after the timeout
  }

  std::vector<c10::Device> devices() const override { return {device_}; }

  std::shared_ptr<DeviceTicket> begin(const std::vector<at::Tensor>& used) override {
    auto ticket = std::make_shared<GpuTicket>(device_.index(), failure_);
    ticket->ready.record(c10::cuda::getCurrentCUDAStream(device_.index()));
    for (const auto& t : used)
      if (t.defined() && t.numel() > 0)
        c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), stream_);
    return ticket;
  }

  void run(DeviceTicket& ticket, const std::function<void(DeviceCollectives&)>& body,
           const std::function<void()>& succeed) override {
    auto& t = static_cast<GpuTicket&>(ticket);
    c10::cuda::CUDAGuard device_guard(device_);
    std::unique_lock gpu_lock(gpu_mutex_);
    if (auto why = failure_->get()) throw CollectiveError(ErrorKind::aborted, *why);
    if (setup_failure_) throw *setup_failure_;  // the same on every later op, in step
    if (!gpu_) {
      try {
        gpu_ = std::make_unique<cuda::GpuCollectives>(cpu_, options_);
      } catch (const CollectiveError& e) {
        setup_failure_ = e;
        throw;
      }
      gpu_raw_ = gpu_.get();
    }
    std::string why;
    if (!gpu_->healthy(&why)) {  // an op before this one failed on the device
      fail(why, /*locked=*/true);
      throw CollectiveError(ErrorKind::peer_failed, *failure_->get());
    }
    c10::cuda::CUDAStreamGuard stream_guard(stream_);
    t.ready.block(stream_);
    auto started = events_->take();
    check(cudaEventRecord(started.get(), stream_.stream()));
    // Watched even when the body throws after queueing device work: that work may hang too.
    auto watch_from_here = [&] {
      auto finished = events_->take();
      const bool recorded = cudaEventRecord(finished.get(), stream_.stream()) == cudaSuccess;
      gpu_lock.unlock();  // the watchdog asks for it
      if (!recorded) return;
      const c10::DeviceIndex d = device_.index();
      watchdog_->watch(WatchedOp{
          [started, d](std::string* w) { return progress_of(started.get(), d, w); },
          [finished, d](std::string* w) { return progress_of(finished.get(), d, w); }});
    };
    try {
      OnStream on_stream(*gpu_, stream_.stream());
      body(on_stream);  // packing and unpacking too run on our stream (the guard)
      t.done.record(stream_);
    } catch (...) {
      try {
        watch_from_here();
      } catch (...) {  // no event to watch with: the op's own error is what the user sees
      }
      throw;
    }
    watch_from_here();
    succeed();  // the CUDA-aware future records its own event on our (current) stream
  }

 private:
  static void check(cudaError_t r) {
    if (r != cudaSuccess)
      throw CollectiveError(ErrorKind::system,
                            std::string("riseml gpu: cudaEventRecord: ") + cudaGetErrorString(r));
  }

  // Remembers why; then ends the process (torch's default), or aborts NCCL, whose kernels in
  // flight end so that nothing waits for ever. `locked`: the caller holds gpu_mutex_ (else an op
  // may hold it, waiting on the device: the abort request ends that wait first).
  void fail(const std::string& why, bool locked) {
    const std::string reason = "riseml gpu: " + why + " on " + where_;
    if (!failure_->set(reason)) return;
    if (teardown_) end_process(reason);  // first: ncclCommAbort itself may hang (torch skips it)
    if (locked) {
      if (gpu_) gpu_->abort(reason);
      return;
    }
    if (cuda::GpuCollectives* gpu = gpu_raw_) gpu->request_abort();
    std::lock_guard lock(gpu_mutex_);
    if (gpu_) gpu_->abort(reason);
  }

  [[noreturn]] static void end_process(const std::string& reason) {
    std::fprintf(stderr,
                 "%s. The collectives this process group already completed on the device may "
                 "have left wrong data in their tensors, so the process ends here, as torch's "
                 "nccl backend does (TORCH_NCCL_ASYNC_ERROR_HANDLING=0 or 2 keeps it running, "
                 "every later collective of the group raising this error).\n",
                 reason.c_str());
    std::fflush(stderr);
    std::_Exit(EXIT_FAILURE);
  }

  Communicator& cpu_;
  c10::Device device_;
  c10::cuda::CUDAStream stream_;
  bool teardown_;
  cuda::GpuOptions options_;
  std::string where_;
  cuda::EventPool* events_;  // the watchdog's events, two an op (the process's pool)
  std::shared_ptr<FailureLatch> failure_ = std::make_shared<FailureLatch>();
  std::mutex gpu_mutex_;  // gpu_ between the worker and the watchdog's thread
  std::unique_ptr<cuda::GpuCollectives> gpu_;
  std::atomic<cuda::GpuCollectives*> gpu_raw_{nullptr};  // gpu_, for request_abort without the lock
  std::optional<CollectiveError> setup_failure_;
  std::unique_ptr<DeviceWatchdog> watchdog_;
};

// TORCH_NCCL_ASYNC_ERROR_HANDLING (or its old name): 0 (no handling) and 2 (clean up only)
// keep the process running after a device failure; unset, 1 (tear down) and 3 (skip clean-up,
// torch 2's default) end it.
bool teardown_on_device_failure() {
  for (const char* name : {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"}) {
    const char* value = std::getenv(name);
    if (value && *value) return std::string(value) != "0" && std::string(value) != "2";
  }
  return true;
}

}  // namespace

std::unique_ptr<DevicePath> make_gpu_path(Communicator& cpu, c10::Device device,
                                          std::chrono::milliseconds timeout) {
  return std::make_unique<GpuPath>(cpu, device, timeout, teardown_on_device_failure());
}

}  // namespace riseml::torch_distributed
