// Collectives of host tensors over the communicator (the CPU transports): the allreduce in
// place or through the fusion buffer (host_allreduce), broadcast and barrier here, the
// collectives whose results differ per rank in host_scatter. Owns the host fusion buffer, which
// grows to the largest bucket and is kept.
#pragma once

#include "strategy.hpp"

#include <cstddef>
#include <vector>

namespace riseml::engine {

class HostStrategy final : public Strategy {
 public:
  explicit HostStrategy(const ExecutionContext& context) : context_(context) {}

  void allreduce(const std::vector<TableEntry*>& bucket, Clock::time_point start) override;
  std::size_t run(TableEntry& entry, LocalRequest* mine) override;

 private:
  std::size_t broadcast(const TableEntry& entry, LocalRequest* mine);

  ExecutionContext context_;
  std::vector<std::byte> fusion_buffer_;
};

}  // namespace riseml::engine
