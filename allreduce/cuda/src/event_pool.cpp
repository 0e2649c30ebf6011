#include <riseml/collective_error.hpp>
#include <riseml/cuda/event_pool.hpp>

#include <map>
#include <string>
#include <utility>

namespace riseml::cuda {

EventPool& EventPool::of(int device, unsigned flags) {
  static std::mutex mutex;
  static auto* pools = new std::map<std::pair<int, unsigned>, EventPool*>();  // never freed
  std::lock_guard lock(mutex);
  EventPool*& p = (*pools)[{device, flags}];
  if (!p) p = new EventPool(device, flags);
  return *p;
}

std::shared_ptr<CUevent_st> EventPool::take() {
  cudaEvent_t e = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      e = free_.back();
      free_.pop_back();
    }
  }
  if (!e) {
    int previous = 0;
    cudaGetDevice(&previous);
    if (previous != device_) cudaSetDevice(device_);
    const cudaError_t r = cudaEventCreateWithFlags(&e, flags_);
    if (previous != device_) cudaSetDevice(previous);
    if (r != cudaSuccess)
      throw CollectiveError(ErrorKind::system, "riseml gpu: cudaEventCreate on CUDA device " +
                                                   std::to_string(device_) + ": " +
                                                   cudaGetErrorString(r));
  }
  return std::shared_ptr<CUevent_st>(e, [this](cudaEvent_t done) {
    std::lock_guard lock(mutex_);
    free_.push_back(done);
  });
}

}  // namespace riseml::cuda
