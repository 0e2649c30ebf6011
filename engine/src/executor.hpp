// Runs the entries that are ready and agreed this cycle, in table order: the allreduces grouped
// by kind (data type, operation, scaling, memory) in order of first appearance, each group cut
// into fusion buckets of at most fusion_threshold bytes (an entry is never split); then the
// other collectives one by one. Each goes to the host or the device strategy; the executor
// writes the NEGOTIATE, QUEUE and collective timeline events around them.
#pragma once

#include "device_strategy.hpp"
#include "host_strategy.hpp"
#include "strategy.hpp"

#include <cstddef>
#include <optional>
#include <vector>

namespace riseml::engine {

class Executor {
 public:
  using Clock = std::chrono::steady_clock;

  Executor(const ExecutionContext& context, std::size_t fusion_threshold)
      : context_(context), host_(context), device_(context), fusion_threshold_(fusion_threshold) {}

  // `ready_at`: when the cycle found them ready (the end of NEGOTIATE, the start of QUEUE).
  void run_allreduces(const std::vector<TableEntry*>& entries, Clock::time_point ready_at);
  void run_other(TableEntry& entry, Clock::time_point ready_at);
  // Tears down the device path (NCCL): at the end of the engine thread, while the peers' end.
  // `failed`: the engine stopped after this error (the device work in flight fails with it).
  void release_device(const std::optional<CollectiveError>& failed) { device_.release(failed); }
  // The device work completed since the last cycle: its timeline events; throws the GPU path's
  // asynchronous failure (the engine then stops).
  void collect_device_completions() { device_.collect_completions(); }

 private:
  // Tensors of at most this many bytes run before the others of their cycle.
  static constexpr std::size_t kSmallFirstBytes = 64 << 10;
  // By kind (type, op, scales, memory), in buckets of up to the fusion threshold.
  void run_fused(const std::vector<TableEntry*>& entries, Clock::time_point ready_at);
  void run_bucket(const std::vector<TableEntry*>& bucket, Clock::time_point ready_at);
  Strategy& strategy_for(const TensorMeta& meta);
  void trace_negotiation(const std::string& name, Clock::time_point ready_at, Clock::time_point start);

  ExecutionContext context_;
  HostStrategy host_;
  DeviceStrategy device_;
  std::size_t fusion_threshold_;
};

}  // namespace riseml::engine
