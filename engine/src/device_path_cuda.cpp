// The engine's GPU side in a build with CUDA: a work stream per engine, a device fusion buffer,
// the scaling kernels of riseml_cuda and GpuCollectives for the reduction.
#include "device_path.hpp"

#include <riseml/cuda/gpu_collectives.hpp>
#include <riseml/cuda/kernels.hpp>
#include <riseml/cuda/status.hpp>

#include <cuda_runtime.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace riseml::engine {

namespace {

void check(cudaError_t e, const char* what, int device) {
  if (e != cudaSuccess)
    throw CollectiveError(ErrorKind::system, std::string("riseml engine: ") + what + " on CUDA device " +
                                                 std::to_string(device) + ": " +
                                                 cudaGetErrorString(e));
}

// Keeps the caller's current device as it was.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    check(cudaGetDevice(&previous_), "cudaGetDevice", device);
    if (previous_ != device) check(cudaSetDevice(device), "cudaSetDevice", device);
  }
  ~DeviceScope() { cudaSetDevice(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
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

class CudaDevicePath final : public DevicePath {
 public:
  CudaDevicePath(Communicator& cpu, const cuda::GpuOptions& options) {
    gpu_ = std::make_unique<cuda::GpuCollectives>(cpu, options);
    device_ = gpu_->device();
    check(cudaSetDevice(device_), "cudaSetDevice", device_);
    check(cudaStreamCreateWithFlags(&work_, cudaStreamNonBlocking), "cudaStreamCreate", device_);
  }
  ~CudaDevicePath() override {
    cudaSetDevice(device_);
    // The NCCL communicators first (bounded: their destructor aborts on a timeout), so that
    // nothing on the work stream still waits for a collective that will never finish.
    gpu_.reset();
    if (work_) cudaStreamSynchronize(work_);
    fusion_.reset();
    if (work_) cudaStreamDestroy(work_);
  }

  void allreduce(std::span<const DeviceTensor> tensors, DataType type, ReduceOp op,
                 double prescale, double postscale) override {
    check(cudaSetDevice(device_), "cudaSetDevice", device_);
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
    if (prescale != 1.0) cuda::scale(type, buffer, total, prescale, work_);
    gpu_->allreduce(buffer, total, type, op, work_);
    if (postscale != 1.0) cuda::scale(type, buffer, total, postscale, work_);
    if (!in_place)
      for_present_runs(tensors, esize, [&](std::byte* at, std::size_t n) {
        cuda::unpack(at, outputs_.data(), bytes_.data(), n, work_);
      }, buffer);
    finish();
  }

  void broadcast(const DeviceTensor& t, DataType type, int root) override {
    check(cudaSetDevice(device_), "cudaSetDevice", device_);
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
    finish();
  }

  std::shared_ptr<void> allgatherv(const DeviceTensor& t, std::span<const std::size_t> counts,
                                   DataType type) override {
    check(cudaSetDevice(device_), "cudaSetDevice", device_);
    std::size_t total = 0;
    for (std::size_t c : counts) total += c;
    auto out = device_alloc(total * element_size(type), device_);
    if (total == 0) return out;
    if (t.input) wait_ready(std::span(&t, 1));
    gpu_->allgatherv(t.input, out.get(), counts, type, work_);
    finish();
    return out;
  }

 private:
  void wait_ready(std::span<const DeviceTensor> tensors) {
    for (const DeviceTensor& t : tensors)
      if (t.ready && *t.ready)
        check(cudaStreamWaitEvent(work_, static_cast<cudaEvent_t>(t.ready->get()), 0),
              "cudaStreamWaitEvent", device_);
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

  void* fusion(std::size_t bytes) {
    if (bytes > fusion_bytes_) {
      // The old buffer may still be read by queued work: drain first.
      check(cudaStreamSynchronize(work_), "cudaStreamSynchronize", device_);
      fusion_ = device_alloc(bytes, device_);
      fusion_bytes_ = bytes;
    }
    return fusion_.get();
  }

  // Local kernels only after the collective (which already waited with a timeout): they cannot
  // hang on a peer.
  void finish() { check(cudaStreamSynchronize(work_), "cudaStreamSynchronize", device_); }

  std::unique_ptr<cuda::GpuCollectives> gpu_;
  int device_ = 0;
  cudaStream_t work_ = nullptr;
  std::shared_ptr<void> fusion_;
  std::size_t fusion_bytes_ = 0;
  std::vector<const void*> inputs_;
  std::vector<void*> outputs_;
  std::vector<std::size_t> bytes_;
};

}  // namespace

ReadyMarker mark_ready(int device, void* stream) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || device >= devices) {
    cudaGetLastError();
    throw CollectiveError(ErrorKind::system,
                          "riseml: a GPU tensor on CUDA device " + std::to_string(device) +
                              " was given, but this process cannot use it (" + cuda::status() +
                              "; CUDA_VISIBLE_DEVICES=" +
                              (std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "unset") +
                              ")");
  }
  DeviceScope scope(device);
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate", device);
  ReadyMarker marker(static_cast<void*>(event), [](void* e) {
    cudaEventDestroy(static_cast<cudaEvent_t>(e));
  });
  check(cudaEventRecord(event, static_cast<cudaStream_t>(stream)), "cudaEventRecord", device);
  return marker;
}

std::unique_ptr<DevicePath> DevicePath::create(Communicator& cpu, int device, const cuda::GpuOptions& options) {
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

void copy_device_to_device(void* dst, const void* src, std::size_t bytes, void* stream) {
  if (bytes == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s), "cudaMemcpyAsync", -1);
  // Complete before the source (the handle's buffer) may be freed.
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize", -1);
}

}  // namespace riseml::engine
