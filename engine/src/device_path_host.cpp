// The host-memory stand-in of the GPU path (GpuOptions::host_standin, tests only): "device"
// pointers are host memory; the fused allreduce packs, scales (scale_copy by
// device_scale_factor: the rules the CUDA kernels follow), reduces over the CPU communicator and unpacks, as
// device_path_cuda.cpp does on the GPU. Completion is deferred to a watcher thread, as there,
// so the engine's deferred completion, per-call errors and ordering run in CI without a GPU.
#include "device_path.hpp"
#include "scaling.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace riseml::engine {

namespace {

// A point that is always passed: the stand-in's work is done when the call returns.
class PassedEvent final : public DeviceEvent {
 public:
  void order_stream_after(void*) const override {}
};

void copy_host_result(void* dst, const std::shared_ptr<void>& src, std::size_t bytes, void*,
                      const DeviceEvent*) {
  if (bytes) std::memcpy(dst, src.get(), bytes);
}

class HostStandinPath final : public DevicePath {
 public:
  explicit HostStandinPath(Communicator& cpu) : cpu_(cpu), watcher_([this] { watch(); }) {}
  ~HostStandinPath() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    watcher_.join();
  }

  void allreduce(std::span<const DeviceTensor> tensors, DataType type, ReduceOp op,
                 double prescale, double postscale) override {
    std::size_t total = 0;
    for (const DeviceTensor& t : tensors) total += t.count;
    if (total == 0) return;
    const std::size_t esize = element_size(type);
    fusion_.assign(total * esize, std::byte{0});  // a joined rank's share stays zero
    std::size_t offset = 0;
    for (const DeviceTensor& t : tensors) {
      if (t.input)
        scale_copy(t.input, fusion_.data() + offset, t.count, type, device_scale_factor(type, prescale));
      offset += t.count * esize;
    }
    cpu_.allreduce(fusion_.data(), fusion_.data(), total, type, op);
    offset = 0;
    for (const DeviceTensor& t : tensors) {
      if (t.output)
        scale_copy(fusion_.data() + offset, t.output, t.count, type, device_scale_factor(type, postscale));
      offset += t.count * esize;
    }
  }

  void reducescatter(std::span<const DeviceTensor> tensors,
                     std::span<const std::vector<std::size_t>> blocks, int rank, DataType type,
                     ReduceOp op, double prescale, double postscale) override {
    const ScatterLayout layout = ScatterLayout::of(blocks);
    if (layout.share == 0) return;
    const std::size_t esize = element_size(type);
    const std::size_t ranks = blocks.front().size();
    fusion_.assign((ranks + 1) * layout.share * esize, std::byte{0});  // padding: zeros
    std::byte* send = fusion_.data();
    std::byte* recv = send + ranks * layout.share * esize;
    const double pre = device_scale_factor(type, prescale);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const auto* in = static_cast<const std::byte*>(tensors[i].input);
      for (std::size_t r = 0; r < ranks; ++r) {
        if (blocks[i][r])
          scale_copy(in, send + (r * layout.share + layout.offset[i][r]) * esize, blocks[i][r], type, pre);
        in += blocks[i][r] * esize;
      }
    }
    cpu_.reduce_scatter(send, recv, layout.share, type, op);
    const auto me = static_cast<std::size_t>(rank);
    for (std::size_t i = 0; i < tensors.size(); ++i)
      if (blocks[i][me])
        scale_copy(recv + layout.offset[i][me] * esize, tensors[i].output, blocks[i][me], type,
                   device_scale_factor(type, postscale));
  }

  void broadcast(const DeviceTensor& t, DataType type, int root) override {
    const std::size_t bytes = t.count * element_size(type);
    if (bytes == 0) return;
    if (t.input == nullptr) {
      fusion_.resize(bytes);
      cpu_.broadcast(fusion_.data(), bytes, DataType::uint8, root);
      return;
    }
    if (t.input != t.output) std::memmove(t.output, t.input, bytes);
    cpu_.broadcast(t.output, bytes, DataType::uint8, root);
  }

  std::shared_ptr<void> allgatherv(std::span<const DeviceTensor> tensors,
                                   std::span<const std::vector<std::size_t>> counts, int rank,
                                   DataType type) override {
    const std::size_t esize = element_size(type);
    const GatherLayout layout = GatherLayout::of(counts);
    auto out = std::shared_ptr<std::byte[]>(new std::byte[std::max<std::size_t>(layout.total * esize, 1)]);
    std::vector<std::size_t> bytes;
    for (std::size_t s : layout.shares.used) bytes.push_back(s * esize);
    if (tensors.size() == 1) {  // rank order is the result's order
      cpu_.allgatherv(tensors.front().input, out.get(), bytes, DataType::uint8);
      return std::shared_ptr<void>(out, out.get());
    }
    const auto me = static_cast<std::size_t>(rank);
    fusion_.assign((layout.shares.used[me] + layout.total) * esize, std::byte{0});
    std::byte* send = fusion_.data();
    std::byte* gathered = send + layout.shares.used[me] * esize;
    for (std::size_t i = 0; i < tensors.size(); ++i)
      if (counts[i][me]) std::memcpy(send + layout.shares.offset[i][me] * esize, tensors[i].input, counts[i][me] * esize);
    cpu_.allgatherv(send, gathered, bytes, DataType::uint8);
    for (std::size_t i = 0; i < tensors.size(); ++i)
      for (std::size_t r = 0; r < layout.shares.used.size(); ++r)
        if (counts[i][r])
          std::memcpy(out.get() + layout.result[i][r] * esize,
                      gathered + (layout.share_start[r] + layout.shares.offset[i][r]) * esize,
                      counts[i][r] * esize);
    return std::shared_ptr<void>(out, out.get());
  }

  std::shared_ptr<void> alltoallv(const DeviceTensor& t, std::span<const std::size_t> send,
                                  std::span<const std::size_t> recv, DataType type) override {
    std::size_t received = 0;
    for (std::size_t c : recv) received += c;
    auto out = std::shared_ptr<std::byte[]>(new std::byte[std::max<std::size_t>(received * element_size(type), 1)]);
    static const std::byte none[8] = {};
    cpu_.alltoallv(t.input ? t.input : none, send, out.get(), recv, type);
    return std::shared_ptr<void>(out, out.get());
  }

  std::shared_ptr<DeviceEvent> done_marker() override { return std::make_shared<PassedEvent>(); }

  void when_done(std::shared_ptr<DeviceEvent>, Completion done) override {
    {
      std::lock_guard lock(mutex_);
      pending_.push_back(std::move(done));
    }
    changed_.notify_all();
  }

  void throw_if_failed() override {}

  void abandon(const CollectiveError& why) override {
    std::lock_guard lock(mutex_);
    abandoned_ = why;
  }

  ResultCopier result_copier() const override { return &copy_host_result; }

 private:
  // Completes the work in order, off the engine thread, as the CUDA path's watcher does.
  void watch() {
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping, nothing left
      Completion done = std::move(pending_.front());
      pending_.pop_front();
      const std::optional<CollectiveError> error = abandoned_;
      lock.unlock();
      done(error);
      lock.lock();
    }
  }

  Communicator& cpu_;
  std::vector<std::byte> fusion_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Completion> pending_;
  bool stopping_ = false;
  std::optional<CollectiveError> abandoned_;
  std::thread watcher_;
};

}  // namespace

std::unique_ptr<DevicePath> make_host_standin_path(Communicator& cpu) {
  return std::make_unique<HostStandinPath>(cpu);
}

}  // namespace riseml::engine
