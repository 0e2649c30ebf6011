// How the GPU collectives run (GpuCollectives), in every build: the engine carries these options
// whether or not this build has CUDA, and parses them with its own at the edge.
#pragma once

#include <chrono>
#include <cstdint>

namespace riseml::cuda {

enum class GpuAlgorithm : std::uint8_t { flat, hierarchical };

struct GpuOptions {
  // RISEML_GPU_ALGORITHM=nccl|hierarchical; HOROVOD_HIERARCHICAL_ALLREDUCE=1 means hierarchical.
  GpuAlgorithm algorithm = GpuAlgorithm::flat;
  // The CUDA device of this rank; -1: the calling thread's current device. RISEML_GPU_DEVICE
  // (the engine: the device of a rank that joined before its first GPU tensor).
  int device = -1;
  // How long a collective may wait for a peer: the CPU communicator's (RISEML_TIMEOUT_S).
  std::chrono::milliseconds timeout = std::chrono::seconds(60);
  // Tests only (CTest label gpu_host): the engine's GPU path runs on a host-memory stand-in of
  // the device: "device" pointers are host memory, reduced over the CPU communicator with the
  // GPU path's rules (dtypes, scaling, fusion, deferred completion). Never read from the
  // environment.
  bool host_standin = false;

  // The variables above but RISEML_TIMEOUT_S (the caller copies its communicator's timeout).
  // Throws CollectiveError(invalid_argument) naming the variable on a malformed value.
  static GpuOptions from_environment();
};

}  // namespace riseml::cuda
