// The GPU path of the backend (see device_path.hpp): only in a build with RISEML_TORCH_GPU.
#include "device_path.hpp"

#include <riseml/collective_error.hpp>
#include <riseml/cuda/gpu_collectives.hpp>
#include <riseml/cuda/gpu_options.hpp>

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <utility>

namespace riseml::torch_distributed {

namespace {

class GpuTicket final : public DeviceTicket {
 public:
  explicit GpuTicket(c10::DeviceIndex device) : device_(device) {}
  void wait_done() override { done.block(c10::cuda::getCurrentCUDAStream(device_)); }

  at::cuda::CUDAEvent ready;  // torch's current stream at the call
  at::cuda::CUDAEvent done;   // our stream after the collective

 private:
  c10::DeviceIndex device_;
};

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
  GpuPath(Communicator& cpu, c10::Device device, std::chrono::milliseconds timeout)
      : cpu_(cpu),
        device_(device),
        stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index())) {
    options_ = cuda::GpuOptions::from_environment();
    options_.device = device.index();
    options_.timeout = timeout;
  }

  ~GpuPath() override {
    // Torch may tear down the group while NCCL work is queued: let it finish first, so that
    // the communicator is not destroyed under it.
    if (gpu_) {
      c10::cuda::CUDAGuard guard(device_);
      (void)cudaStreamSynchronize(stream_.stream());
    }
  }

  std::vector<c10::Device> devices() const override { return {device_}; }

  std::shared_ptr<DeviceTicket> begin(const std::vector<at::Tensor>& used) override {
    auto ticket = std::make_shared<GpuTicket>(device_.index());
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
    if (!gpu_) gpu_ = std::make_unique<cuda::GpuCollectives>(cpu_, options_);
    std::string why;
    if (!gpu_->healthy(&why))
      throw CollectiveError(ErrorKind::aborted, "riseml gpu: NCCL failed earlier: " + why);
    c10::cuda::CUDAStreamGuard stream_guard(stream_);
    t.ready.block(stream_);
    OnStream on_stream(*gpu_, stream_.stream());
    body(on_stream);  // packing and unpacking too run on our stream (the guard)
    t.done.record(stream_);
    succeed();  // the CUDA-aware future records its own event on our (current) stream
  }

 private:
  Communicator& cpu_;
  c10::Device device_;
  c10::cuda::CUDAStream stream_;
  cuda::GpuOptions options_;
  std::unique_ptr<cuda::GpuCollectives> gpu_;
};

}  // namespace

std::unique_ptr<DevicePath> make_gpu_path(Communicator& cpu, c10::Device device,
                                          std::chrono::milliseconds timeout) {
  return std::make_unique<GpuPath>(cpu, device, timeout);
}

}  // namespace riseml::torch_distributed
