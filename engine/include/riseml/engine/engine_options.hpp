// The engine's knobs, with the environment variables that set them (the RISEML_ name wins over
// the Horovod one when both are set).
#pragma once

#include <riseml/cuda/gpu_options.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace riseml::engine {

struct EngineOptions {
  // Ready allreduces of one data type and operation are packed into a buffer of at most this
  // many bytes (a larger tensor is reduced on its own, in place). 0 disables fusion.
  // RISEML_FUSION_THRESHOLD / HOROVOD_FUSION_THRESHOLD (bytes).
  std::size_t fusion_threshold = 64u << 20;
  // How long the engine thread waits between negotiation cycles.
  // RISEML_CYCLE_TIME_MS / HOROVOD_CYCLE_TIME (milliseconds, may be fractional).
  std::chrono::microseconds cycle_time = std::chrono::milliseconds(1);
  // Rank 0 reports a tensor that some ranks submitted and others did not after this long.
  // RISEML_STALL_CHECK_S / HOROVOD_STALL_CHECK_TIME_SECONDS; 0 disables the check.
  std::chrono::milliseconds stall_check = std::chrono::seconds(60);
  // After this long a stalled tensor fails on the ranks that submitted it (0: never).
  // RISEML_STALL_SHUTDOWN_S / HOROVOD_STALL_SHUTDOWN_TIME_SECONDS.
  std::chrono::milliseconds stall_shutdown = std::chrono::milliseconds(0);
  // A deadlock fails what is pending on every rank after this long: every rank has a thread
  // blocked waiting on one of this engine's handles, and none has finished meanwhile (the ranks
  // called collectives in different orders, or one skipped one, and each now waits for its own;
  // Horovod hangs there). A rank that computes, or waits on another engine, holds it off.
  // RISEML_DEADLOCK_S; 0 disables it.
  std::chrono::milliseconds deadlock_shutdown = std::chrono::seconds(30);
  // GPU tensors (a build with CUDA): the algorithm (RISEML_GPU_ALGORITHM /
  // HOROVOD_HIERARCHICAL_ALLREDUCE) and the device of a rank that has joined before its first
  // GPU tensor (RISEML_GPU_DEVICE; -1: the local rank modulo the node's devices). The timeout is
  // the communicator's.
  cuda::GpuOptions gpu;
  // A thread that waits on a handle runs the engine's cycles itself while the engine thread is
  // not in one (no wake-up of another thread on the way in or out; host tensors only).
  // RISEML_WAITERS_RUN_CYCLES (1 or 0).
  bool waiters_run_cycles = true;
  // Chrome trace (chrome://tracing, Perfetto) written by rank 0. RISEML_TIMELINE / HOROVOD_TIMELINE.
  std::string timeline_path;
  // Where warnings (stall reports) go; default: one line on stderr.
  std::function<void(const std::string&)> warn;

  // The defaults overridden by the environment. Throws CollectiveError(invalid_argument) on a
  // malformed value, naming the variable.
  static EngineOptions from_environment();
};

}  // namespace riseml::engine
