// What a Handle shares with the engine thread: completion, the error, the results.
#pragma once

#include <riseml/collective_error.hpp>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "cycle_runner.hpp"
#include "device_path.hpp"
#include "wait_census.hpp"

namespace riseml::engine {

struct HandleState {
  std::mutex mutex;
  std::condition_variable done_changed;
  bool done = false;
  std::optional<CollectiveError> error;
  // allgather (one per tensor) and alltoall results in host memory, with their shapes.
  std::vector<std::vector<std::byte>> outputs;
  std::vector<std::vector<std::int64_t>> output_shapes;
  std::vector<std::int64_t> received_splits;  // alltoall
  // allgather and alltoall of device tensors: the result on the device (freed with the state),
  // one part per output, end to end, of these bytes.
  std::shared_ptr<void> device_output;
  std::vector<std::size_t> device_output_parts;
  int join_result = -1;
  // Device work: the caller's stream (Request::stream); once the engine enqueued the work,
  // `enqueued` and the point after it on the device. done comes later, from the path's watcher.
  bool on_device = false;
  void* stream = nullptr;
  bool enqueued = false;
  std::shared_ptr<DeviceEvent> device_done;
  DevicePath::ResultCopier copy_result = nullptr;  // device_output's copier
  // The engine's census: waits on this handle and its finishing are counted there.
  std::shared_ptr<WaitCensus> census;
  // A thread that waits on this handle runs the engine's cycles itself when it may.
  std::shared_ptr<CycleRunner> runner;

  bool is_done() {
    std::lock_guard lock(mutex);
    return done;
  }
  // Done, or (device work) enqueued: nothing is left for a thread that runs cycles to do.
  bool is_settled() {
    std::lock_guard lock(mutex);
    return done || enqueued;
  }

  void mark_enqueued(std::shared_ptr<DeviceEvent> done_at) {
    {
      std::lock_guard lock(mutex);
      device_done = std::move(done_at);
      enqueued = true;
    }
    done_changed.notify_all();
  }

  // Done, with `error` if it failed; a handle already done keeps what it had. Whoever waits
  // is told by wake(): a bucket of handles is settled first and woken after, so that a caller
  // waiting on them in turn is woken once, not once per handle (a sleep and a wake-up each).
  bool settle(const std::optional<CollectiveError>& e) {
    std::lock_guard lock(mutex);
    if (done) return false;
    error = e;
    done = true;
    return true;
  }
  void wake() {
    if (census) census->finished.fetch_add(1);
    done_changed.notify_all();
  }
  void complete() {
    if (settle(std::nullopt)) wake();
  }
  void fail(const CollectiveError& e) {
    if (settle(e)) wake();
  }
};

}  // namespace riseml::engine
