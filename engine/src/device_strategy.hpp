// Collectives of GPU tensors through the DevicePath (NCCL): a fusion bucket of allreduces as one
// device collective, broadcast, and allgather (the result stays on the device, in the handle).
// The path is built collectively at the first device entry every rank runs (the same cycle on
// every rank), on this process's GPU, and released when the engine thread ends.
#pragma once

#include "device_path.hpp"
#include "strategy.hpp"

#include <memory>

namespace riseml::engine {

class DeviceStrategy final : public Strategy {
 public:
  explicit DeviceStrategy(const ExecutionContext& context) : context_(context) {}

  void allreduce(const std::vector<TableEntry*>& bucket, Clock::time_point start) override;
  std::size_t run(TableEntry& entry, LocalRequest* mine) override;
  void release() { path_.reset(); }

 private:
  // `mine`: this rank's first request of the entries at hand, which names the device.
  DevicePath& path(const LocalRequest* mine);

  ExecutionContext context_;
  std::unique_ptr<DevicePath> path_;
};

}  // namespace riseml::engine
