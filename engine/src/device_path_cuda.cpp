// The engine's GPU side in a build with CUDA: a work stream per engine, a device fusion buffer,
// the scaling kernels of riseml_cuda and GpuCollectives for the reduction. Stream-ordered: the
// work stream waits for the caller's ready events (never the CPU), a call returns once its work
// is enqueued, and a watcher thread blocks on pooled completion events (blocking-sync, no
// polling) to complete the handles. The engine thread checks NCCL's asynchronous errors and the
// timeout of the oldest work in flight at every cycle (throw_if_failed), and aborts the NCCL
// communicator then, which ends the kernels the watcher waits for.
#include "device_path.hpp"
#include "scaling.hpp"

#include <riseml/cuda/event_pool.hpp>
#include <riseml/cuda/gpu_collectives.hpp>
#include <riseml/cuda/kernels.hpp>
#include <riseml/cuda/status.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace riseml::engine {

namespace {

using Clock = std::chrono::steady_clock;

void check(cudaError_t e, const char* what, int device) {
  if (e != cudaSuccess)
    throw CollectiveError(ErrorKind::system, std::string("riseml engine: ") + what + " on CUDA device " +
                                                 std::to_string(device) + ": " +
                                                 cudaGetErrorString(e));
}

// Keeps the caller's current device as it was; restores it only when it changed it (every
// enqueue of a GPU tensor passes here: one CUDA call fewer when the caller is on its device).
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    check(cudaGetDevice(&previous_), "cudaGetDevice", device);
    if (previous_ != device) {
      check(cudaSetDevice(device), "cudaSetDevice", device);
      changed_ = true;
    }
  }
  ~DeviceScope() {
    if (changed_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

using cuda::EventPool;  // one per (device, flags), alive for the process

// The ready markers: cheap to record and wait on.
constexpr unsigned kMarkerFlags = cudaEventDisableTiming;
// Completion: the watcher sleeps in cudaEventSynchronize instead of spinning.
constexpr unsigned kDoneFlags = cudaEventDisableTiming | cudaEventBlockingSync;

// A ready marker: the caller's stream at enqueue(). `seq` orders the markers of one stream (they
// are recorded under one mutex), so a bucket waits only on the latest of each stream.
struct ReadyPoint {
  std::shared_ptr<CUevent_st> event;
  cudaStream_t stream;
  std::uint64_t seq;
};

class CudaEvent final : public DeviceEvent {
 public:
  CudaEvent(std::shared_ptr<CUevent_st> event, int device) : event_(std::move(event)), device_(device) {}
  void order_stream_after(void* stream) const override {
    DeviceScope scope(device_);
    check(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), event_.get(), 0),
          "cudaStreamWaitEvent", device_);
  }
  cudaEvent_t get() const { return event_.get(); }
  int device() const { return device_; }

 private:
  std::shared_ptr<CUevent_st> event_;
  int device_;
};

std::shared_ptr<void> device_alloc(std::size_t bytes, int device) {
  void* p = nullptr;
  if (bytes) check(cudaMalloc(&p, bytes), "cudaMalloc", device);
  return std::shared_ptr<void>(p, [device](void* q) {
    if (!q) return;
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(device);
    cudaFree(q);
    cudaSetDevice(previous);
  });
}

// A stream of its own per device for freeing results, alive for the process (a result may be
// freed after every engine is gone).
cudaStream_t free_stream(int device) {
  static std::mutex mutex;
  static auto* streams = new std::map<int, cudaStream_t>();  // never freed
  std::lock_guard lock(mutex);
  cudaStream_t& s = (*streams)[device];
  if (!s) {
    DeviceScope scope(device);
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate", device);
  }
  return s;
}

bool pools_supported(int device) {
  int on = 0;
  if (cudaDeviceGetAttribute(&on, cudaDevAttrMemoryPoolsSupported, device) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return on != 0;
}

// The deleter of an allgather's result (device memory the handle owns): it knows the points
// after which nothing reads the memory any more (the allgather that writes it, each copy out of
// it), and frees it ordered after them: cudaFreeAsync on free_stream(), no CPU wait and no
// device-wide synchronisation of cudaFree. Without stream-ordered memory (pools unsupported):
// cudaMalloc, and the free waits for those points.
class ResultFree {
 public:
  ResultFree(int device, bool pooled) : state_(std::make_shared<State>()) {
    state_->device = device;
    state_->pooled = pooled;
  }
  int device() const { return state_->device; }
  // Work queued on a stream before `event` may still read the memory.
  void add_reader(std::shared_ptr<CUevent_st> event) const {
    std::lock_guard lock(state_->mutex);
    state_->readers.push_back(std::move(event));
  }
  void operator()(void* p) const {
    if (!p) return;
    State& s = *state_;
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(s.device);
    std::lock_guard lock(s.mutex);
    cudaStream_t stream = nullptr;
    if (s.pooled) {
      try {
        stream = free_stream(s.device);
      } catch (const CollectiveError&) {  // no stream to free on: wait, then free
      }
    }
    if (stream) {
      for (const auto& e : s.readers) cudaStreamWaitEvent(stream, e.get(), 0);
      cudaFreeAsync(p, stream);
    } else {
      for (const auto& e : s.readers) cudaEventSynchronize(e.get());
      if (s.pooled)
        cudaFreeAsync(p, nullptr);  // after the legacy stream's work; memory from a pool
      else
        cudaFree(p);
    }
    cudaGetLastError();  // at exit the context may be gone: nothing to report to
    s.readers.clear();
    cudaSetDevice(previous);
  }

 private:
  struct State {
    int device = 0;
    bool pooled = false;
    std::mutex mutex;
    std::vector<std::shared_ptr<CUevent_st>> readers;
  };
  std::shared_ptr<State> state_;
};

// `bytes` of stream-ordered device memory, usable by the work queued on `stream` from now on.
std::shared_ptr<void> result_alloc(std::size_t bytes, int device, cudaStream_t stream) {
  const bool pooled = pools_supported(device);
  void* p = nullptr;
  if (bytes) {
    if (pooled)
      check(cudaMallocAsync(&p, bytes, stream), "cudaMallocAsync", device);
    else
      check(cudaMalloc(&p, bytes), "cudaMalloc", device);
  }
  std::shared_ptr<void> result(p, ResultFree(device, pooled));
  if (pooled && p) {
    // Freed on another stream: not before the allocation's own point on `stream`, even when an
    // error comes before any work that writes it (written_now) is queued.
    auto allocated = EventPool::of(device, kMarkerFlags).take();
    check(cudaEventRecord(allocated.get(), stream), "cudaEventRecord", device);
    std::get_deleter<ResultFree>(result)->add_reader(std::move(allocated));
  }
  return result;
}

// A device result to `dst` on the caller's stream, after the work that made it; returns once
// enqueued (the result's memory is freed after this copy, see ResultFree).
void copy_device_result(void* dst, const std::shared_ptr<void>& src, std::size_t bytes,
                        void* stream, const DeviceEvent* after) {
  if (bytes == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  const ResultFree* owner = std::get_deleter<ResultFree>(src);
  // On the result's device: stream 0 is that device's legacy stream, and the event is its.
  std::optional<DeviceScope> scope;
  if (owner) scope.emplace(owner->device());
  if (after) after->order_stream_after(stream);
  check(cudaMemcpyAsync(dst, src.get(), bytes, cudaMemcpyDefault, s), "cudaMemcpyAsync", -1);
  if (!owner) {  // not ours: complete before the source may be freed
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize", -1);
    return;
  }
  auto copied = EventPool::of(owner->device(), kMarkerFlags).take();
  check(cudaEventRecord(copied.get(), s), "cudaEventRecord", owner->device());
  owner->add_reader(std::move(copied));
}

class CudaDevicePath final : public DevicePath {
 public:
  CudaDevicePath(Communicator& cpu, const cuda::GpuOptions& options) : timeout_(options.timeout) {
    DeviceScope scope(options.device);  // create() names it; the calling thread's stays
    gpu_ = std::make_unique<cuda::GpuCollectives>(cpu, options);
    device_ = gpu_->device();
    check(cudaStreamCreateWithFlags(&work_, cudaStreamNonBlocking), "cudaStreamCreate", device_);
    watcher_ = std::thread([this] { watch(); });
  }
  ~CudaDevicePath() override {
    cudaSetDevice(device_);
    // The NCCL communicators first (bounded: their destructor aborts on a timeout), so that
    // nothing on the work stream still waits for a collective that will never finish; then
    // the watcher completes what is left.
    gpu_.reset();
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    watcher_.join();
    if (work_) cudaStreamSynchronize(work_);
    fusion_.reset();
    if (work_) cudaStreamDestroy(work_);
  }

  void allreduce(std::span<const DeviceTensor> tensors, DataType type, ReduceOp op,
                 double prescale, double postscale) override {
    DeviceScope scope(device_);  // any thread that runs a cycle calls; its device is kept
    std::size_t total = 0;
    for (const DeviceTensor& t : tensors) total += t.count;
    if (total == 0) return;
    const std::size_t esize = element_size(type);
    wait_ready(tensors);
    void* buffer;
    const bool in_place = tensors.size() == 1 && tensors.front().input != nullptr;
    if (in_place) {  // on the caller's tensor, no fusion copy
      const DeviceTensor& t = tensors.front();
      buffer = t.output;
      if (t.input != t.output)
        check(cudaMemcpyAsync(t.output, t.input, total * esize, cudaMemcpyDeviceToDevice, work_),
              "cudaMemcpyAsync", device_);
    } else {
      buffer = fusion(total * esize);
      bool absent = false;
      for (const DeviceTensor& t : tensors) absent = absent || t.input == nullptr;
      if (absent)  // a joined rank's share: zeros
        check(cudaMemsetAsync(buffer, 0, total * esize, work_), "cudaMemsetAsync", device_);
      for_present_runs(tensors, esize, [&](std::byte* at, std::size_t n) {
        cuda::pack(at, inputs_.data(), bytes_.data(), n, work_);
      }, buffer);
    }
    if (prescale != 1.0) cuda::scale(type, buffer, total, device_scale_factor(type, prescale), work_);
    gpu_->allreduce(buffer, total, type, op, work_);
    if (postscale != 1.0) cuda::scale(type, buffer, total, device_scale_factor(type, postscale), work_);
    if (!in_place)
      for_present_runs(tensors, esize, [&](std::byte* at, std::size_t n) {
        cuda::unpack(at, outputs_.data(), bytes_.data(), n, work_);
      }, buffer);
  }

  void reducescatter(std::span<const DeviceTensor> tensors,
                     std::span<const std::vector<std::size_t>> blocks, int rank, DataType type,
                     ReduceOp op, double prescale, double postscale) override {
    DeviceScope scope(device_);  // any thread that runs a cycle calls; its device is kept
    const ScatterLayout layout = ScatterLayout::of(blocks);
    if (layout.share == 0) return;
    const std::size_t esize = element_size(type);
    const std::size_t ranks = blocks.front().size();
    wait_ready(tensors);
    auto* send = static_cast<std::byte*>(fusion((ranks + 1) * layout.share * esize));
    std::byte* recv = send + ranks * layout.share * esize;
    if (layout.padded)  // the padding takes part in the reduction: zeros, never NaN
      check(cudaMemsetAsync(send, 0, ranks * layout.share * esize, work_), "cudaMemsetAsync", device_);
    // One batched pack per rank's share: its block of every tensor, end to end. before[i]:
    // where tensor i's block for rank r starts in its input.
    std::vector<std::size_t> before(tensors.size(), 0);
    for (std::size_t r = 0; r < ranks; ++r) {
      inputs_.clear();
      bytes_.clear();
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        if (blocks[i][r]) {
          inputs_.push_back(static_cast<const std::byte*>(tensors[i].input) + before[i] * esize);
          bytes_.push_back(blocks[i][r] * esize);
        }
        before[i] += blocks[i][r];
      }
      if (!inputs_.empty())
        cuda::pack(send + r * layout.share * esize, inputs_.data(), bytes_.data(), inputs_.size(), work_);
    }
    if (prescale != 1.0)
      cuda::scale(type, send, ranks * layout.share, device_scale_factor(type, prescale), work_);
    gpu_->reduce_scatter(send, recv, layout.share, type, op, work_);
    const auto me = static_cast<std::size_t>(rank);
    if (postscale != 1.0)
      cuda::scale(type, recv, layout.share, device_scale_factor(type, postscale), work_);
    outputs_.clear();
    bytes_.clear();
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      if (!blocks[i][me]) continue;
      outputs_.push_back(tensors[i].output);
      bytes_.push_back(blocks[i][me] * esize);
    }
    if (!outputs_.empty()) cuda::unpack(recv, outputs_.data(), bytes_.data(), outputs_.size(), work_);
  }

  void broadcast(const DeviceTensor& t, DataType type, int root) override {
    DeviceScope scope(device_);  // any thread that runs a cycle calls; its device is kept
    const std::size_t bytes = t.count * element_size(type);
    if (bytes == 0) return;
    void* buffer = t.output;
    if (t.input == nullptr) {
      buffer = fusion(bytes);
    } else {
      wait_ready(std::span(&t, 1));
      if (t.input != t.output)
        check(cudaMemcpyAsync(t.output, t.input, bytes, cudaMemcpyDeviceToDevice, work_),
              "cudaMemcpyAsync", device_);
    }
    gpu_->broadcast(buffer, t.count, type, root, work_);
  }

  std::shared_ptr<void> allgatherv(std::span<const DeviceTensor> tensors,
                                   std::span<const std::vector<std::size_t>> counts, int rank,
                                   DataType type) override {
    DeviceScope scope(device_);  // any thread that runs a cycle calls; its device is kept
    const std::size_t esize = element_size(type);
    const GatherLayout layout = GatherLayout::of(counts);
    auto out = result_alloc(layout.total * esize, device_, work_);
    if (layout.total == 0) return out;
    const auto me = static_cast<std::size_t>(rank);
    if (tensors.size() == 1) {  // rank order is the result's order: straight into it
      if (tensors.front().input) wait_ready(tensors);
      gpu_->allgatherv(tensors.front().input, out.get(), layout.shares.used, type, work_);
      written_now(out);
      return out;
    }
    // This rank's pieces end to end (one batched pack), one allgather of the shares, then one
    // batched unpack per rank's share into the tensors' places in the result.
    auto* send = static_cast<std::byte*>(fusion((layout.shares.used[me] + layout.total) * esize));
    std::byte* gathered = send + layout.shares.used[me] * esize;
    inputs_.clear();
    bytes_.clear();
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      if (!counts[i][me]) continue;
      inputs_.push_back(tensors[i].input);
      bytes_.push_back(counts[i][me] * esize);
    }
    if (!inputs_.empty()) {
      wait_ready(tensors);
      cuda::pack(send, inputs_.data(), bytes_.data(), inputs_.size(), work_);
    }
    gpu_->allgatherv(send, gathered, layout.shares.used, type, work_);
    auto* result = static_cast<std::byte*>(out.get());
    for (std::size_t r = 0; r < layout.shares.used.size(); ++r) {
      outputs_.clear();
      bytes_.clear();
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        if (!counts[i][r]) continue;
        outputs_.push_back(result + layout.result[i][r] * esize);
        bytes_.push_back(counts[i][r] * esize);
      }
      if (!outputs_.empty())
        cuda::unpack(gathered + layout.share_start[r] * esize, outputs_.data(), bytes_.data(),
                     outputs_.size(), work_);
    }
    written_now(out);
    return out;
  }

  std::shared_ptr<void> alltoallv(const DeviceTensor& t, std::span<const std::size_t> send,
                                  std::span<const std::size_t> recv, DataType type) override {
    DeviceScope scope(device_);  // any thread that runs a cycle calls; its device is kept
    std::size_t received = 0, sent = 0;
    for (std::size_t c : recv) received += c;
    for (std::size_t c : send) sent += c;
    auto out = result_alloc(received * element_size(type), device_, work_);
    if (received == 0 && sent == 0) return out;
    if (t.input) wait_ready(std::span(&t, 1));
    gpu_->alltoallv(t.input, send, out.get(), recv, type, work_);
    written_now(out);
    return out;
  }

  std::shared_ptr<DeviceEvent> done_marker() override {
    DeviceScope scope(device_);
    auto event = EventPool::of(device_, kDoneFlags).take();
    check(cudaEventRecord(event.get(), work_), "cudaEventRecord", device_);
    return std::make_shared<CudaEvent>(std::move(event), device_);
  }

  void when_done(std::shared_ptr<DeviceEvent> marker, Completion done) override {
    {
      std::lock_guard lock(mutex_);
      pending_.push_back(Pending{std::static_pointer_cast<CudaEvent>(std::move(marker)),
                                 std::move(done), Clock::now()});
    }
    changed_.notify_all();
  }

  void throw_if_failed() override {
    std::unique_lock lock(mutex_);
    if (!failure_ && !pending_.empty()) {
      // The oldest work in flight has waited since it was queued or since the work before it
      // completed, whichever is later: a busy GPU is not a dead peer.
      const auto since = std::max(pending_.front().queued, last_completed_);
      std::string why;
      if (gpu_ && !gpu_->healthy(&why)) {
        fail(lock, CollectiveError(ErrorKind::peer_failed, "riseml engine: " + why));
      } else if (Clock::now() - since > timeout_) {
        fail(lock, CollectiveError(ErrorKind::timeout,
                                   "riseml engine: a GPU collective did not complete within " +
                                       std::to_string(timeout_.count()) +
                                       " ms on CUDA device " + std::to_string(device_) +
                                       " (a peer dead or stopped?)"));
      }
    }
    if (failure_) throw *failure_;
  }

  void abandon(const CollectiveError& why) override {
    std::unique_lock lock(mutex_);
    if (!failure_ && !pending_.empty()) fail(lock, why);
  }

  ResultCopier result_copier() const override { return &copy_device_result; }

 private:
  struct Pending {
    std::shared_ptr<CudaEvent> event;
    Completion done;
    Clock::time_point queued;
  };

  // With mutex_ held: remember the failure and abort NCCL, which ends the kernels in flight so
  // that the watcher's events complete (it then fails their handles with `error`).
  void fail(std::unique_lock<std::mutex>&, CollectiveError error) {
    failure_ = std::move(error);
    if (gpu_) gpu_->abort(failure_->what());
  }

  void watch() {
    cudaSetDevice(device_);
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;
      Pending p = pending_.front();  // stays queued: throw_if_failed times the oldest
      lock.unlock();
      const cudaError_t e = cudaEventSynchronize(p.event->get());
      lock.lock();
      pending_.pop_front();
      last_completed_ = Clock::now();
      std::optional<CollectiveError> error = failure_;
      if (!error && e != cudaSuccess)
        error = CollectiveError(ErrorKind::system, std::string("riseml engine: GPU work failed on "
                                                               "CUDA device ") +
                                                       std::to_string(device_) + ": " +
                                                       cudaGetErrorString(e));
      if (error && !failure_) failure_ = error;
      lock.unlock();
      p.done(error);
      lock.lock();
    }
  }

  // The work stream waits for the latest ready point of each caller stream among `tensors`
  // (a bucket of 100 gradients from one stream: one wait, not 100).
  void wait_ready(std::span<const DeviceTensor> tensors) {
    latest_.clear();
    for (const DeviceTensor& t : tensors) {
      if (!t.ready || !*t.ready) continue;
      const auto* p = static_cast<const ReadyPoint*>(t.ready->get());
      auto it = std::find_if(latest_.begin(), latest_.end(),
                             [&](const ReadyPoint* q) { return q->stream == p->stream; });
      if (it == latest_.end())
        latest_.push_back(p);
      else if (p->seq > (*it)->seq)
        *it = p;
    }
    for (const ReadyPoint* p : latest_)
      check(cudaStreamWaitEvent(work_, p->event.get(), 0), "cudaStreamWaitEvent", device_);
  }

  // Calls f(where in the fusion buffer, how many) for each run of consecutive tensors this
  // rank has, with inputs_/outputs_/bytes_ holding that run (pack/unpack lay tensors end to end).
  template <class F>
  void for_present_runs(std::span<const DeviceTensor> tensors, std::size_t esize, F&& f,
                        void* fusion_buffer) {
    auto* base = static_cast<std::byte*>(fusion_buffer);
    std::size_t offset = 0;
    std::byte* run_start = nullptr;
    auto flush = [&] {
      if (!inputs_.empty()) f(run_start, inputs_.size());
      inputs_.clear();
      outputs_.clear();
      bytes_.clear();
    };
    flush();
    for (const DeviceTensor& t : tensors) {
      if (t.input == nullptr) {
        flush();
      } else {
        if (inputs_.empty()) run_start = base + offset;
        inputs_.push_back(t.input);
        outputs_.push_back(t.output);
        bytes_.push_back(t.count * esize);
      }
      offset += t.count * esize;
    }
    flush();
  }

  // A result of result_alloc() is freed only after the work queued so far, which writes it
  // (a result nobody copies out).
  void written_now(const std::shared_ptr<void>& result) {
    auto written = EventPool::of(device_, kMarkerFlags).take();
    check(cudaEventRecord(written.get(), work_), "cudaEventRecord", device_);
    std::get_deleter<ResultFree>(result)->add_reader(std::move(written));
  }

  void* fusion(std::size_t bytes) {
    if (bytes > fusion_bytes_) {
      // The old buffer may still be read by queued work: drain first (rare: it only grows).
      check(cudaStreamSynchronize(work_), "cudaStreamSynchronize", device_);
      fusion_ = device_alloc(bytes, device_);
      fusion_bytes_ = bytes;
    }
    return fusion_.get();
  }

  std::unique_ptr<cuda::GpuCollectives> gpu_;
  std::chrono::milliseconds timeout_;
  int device_ = 0;
  cudaStream_t work_ = nullptr;
  std::shared_ptr<void> fusion_;
  std::size_t fusion_bytes_ = 0;
  std::vector<const void*> inputs_;
  std::vector<void*> outputs_;
  std::vector<std::size_t> bytes_;
  std::vector<const ReadyPoint*> latest_;
  // Shared with the watcher.
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Pending> pending_;
  Clock::time_point last_completed_{};
  std::optional<CollectiveError> failure_;
  bool stopping_ = false;
  std::thread watcher_;
};

}  // namespace

ReadyMarker mark_ready(int device, void* stream) {
  static const int devices = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      n = 0;
    }
    return n;
  }();
  if (device >= devices) {
    cudaGetLastError();
    throw CollectiveError(ErrorKind::system,
                          "riseml: a GPU tensor on CUDA device " + std::to_string(device) +
                              " was given, but this process cannot use it (" + cuda::status() +
                              "; CUDA_VISIBLE_DEVICES=" +
                              (std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "unset") +
                              ")");
  }
  static std::mutex order;
  static std::uint64_t next_seq = 0;
  auto point = std::make_shared<ReadyPoint>();
  point->event = EventPool::of(device, kMarkerFlags).take();
  point->stream = static_cast<cudaStream_t>(stream);
  DeviceScope scope(device);
  std::lock_guard lock(order);
  check(cudaEventRecord(point->event.get(), point->stream), "cudaEventRecord", device);
  point->seq = next_seq++;
  return std::static_pointer_cast<void>(point);
}

std::unique_ptr<DevicePath> DevicePath::create(Communicator& cpu, int device, const cuda::GpuOptions& options) {
  if (options.host_standin) return make_host_standin_path(cpu);
  if (device < 0) {
    if (options.device >= 0) {
      device = options.device;
    } else {
      int devices = 0;
      check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount", -1);
      device = devices > 0 ? cpu.host_layout().local_index % devices : 0;
    }
  }
  cuda::GpuOptions on_device = options;
  on_device.device = device;
  return std::make_unique<CudaDevicePath>(cpu, on_device);
}

}  // namespace riseml::engine
