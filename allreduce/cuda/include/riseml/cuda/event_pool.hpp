// Reused CUDA events: creating one per call costs microseconds a small collective cannot spare.
// One pool per (device, flags), alive for the process (events may outlive any engine or process
// group that took them). Only in a build with CUDA (RISEML_HAVE_CUDA).
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <vector>

namespace riseml::cuda {

class EventPool {
 public:
  static EventPool& of(int device, unsigned flags);

  // An event of this pool, returned to it when the last owner lets go. Throws CollectiveError
  // (system) naming the device when CUDA cannot make one.
  std::shared_ptr<CUevent_st> take();

 private:
  EventPool(int device, unsigned flags) : device_(device), flags_(flags) {}
  int device_;
  unsigned flags_;
  std::mutex mutex_;
  std::vector<cudaEvent_t> free_;
};

}  // namespace riseml::cuda
