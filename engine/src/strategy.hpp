// How one kind of memory runs the collectives the executor hands it: HostStrategy (host
// tensors over the communicator) and DeviceStrategy (GPU tensors through the DevicePath). The
// executor decides what runs when and writes the timeline around it; a strategy moves the
// bytes. ExecutionContext is what a strategy may touch of the engine.
#pragma once

#include "finisher.hpp"
#include "tensor_queue.hpp"
#include "tensor_table.hpp"
#include "timeline.hpp"

#include <riseml/communicator.hpp>
#include <riseml/cuda/gpu_options.hpp>

#include <chrono>
#include <cstddef>
#include <vector>

namespace riseml::engine {

struct ExecutionContext {
  Communicator& comm;
  Timeline& timeline;
  TensorQueue& queue;  // this rank's requests (buffers, handles)
  Finisher& finisher;
  int rank;
  int size;
  cuda::GpuOptions gpu;  // EngineOptions::gpu, with the communicator's timeout
};

class Strategy {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~Strategy() = default;

  // One fusion bucket: allreduces that agree on data type, operation and scaling, run as one
  // collective from `start`; writes each entry's timeline events and finishes each entry.
  virtual void allreduce(const std::vector<TableEntry*>& bucket, Clock::time_point start) = 0;
  // One broadcast, allgather, reducescatter, alltoall or barrier; `mine` is this rank's
  // request (null: this rank joined). Returns the bytes it moved, for the timeline.
  virtual std::size_t run(TableEntry& entry, LocalRequest* mine) = 0;
};

}  // namespace riseml::engine
