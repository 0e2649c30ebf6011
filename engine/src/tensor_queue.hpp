// What this rank's callers submitted and the engine thread has not finished: the requests in
// flight (by name), the names not yet sent to the other ranks, the join handle, and the flags a
// caller raises for the engine thread (shutdown, a timeline switch). It owns the one mutex the
// callers share with the engine thread, and the parking handshake: an idle engine thread sleeps
// in the communicator, and a caller that adds work wakes it.
#pragma once

#include "device_path.hpp"
#include "handle_state.hpp"

#include <riseml/communicator.hpp>
#include <riseml/engine/engine.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace riseml::engine {

// A request submitted on this rank and not finished.
struct LocalRequest {
  using Clock = std::chrono::steady_clock;
  Request request;
  std::shared_ptr<HandleState> handle;
  Clock::time_point enqueued;
  ReadyMarker ready;  // device tensors: ready after this point of the caller's stream
};

// What the engine thread takes at the start of a cycle.
struct CycleInput {
  // Requests submitted since the last cycle, in order: in flight until the engine thread itself
  // removes them (TensorQueue::find's rule).
  std::vector<LocalRequest*> fresh;
  bool shutdown = false;
  bool leaving = false;                  // the shutdown is this process's exit
  bool join = false;                     // join() was called and is to be announced
  std::optional<std::string> timeline;  // a switch: the new path, empty to stop
};

class TensorQueue {
 public:
  using Clock = std::chrono::steady_clock;

  // `comm` wakes a parked engine thread; `rank` is for the messages.
  TensorQueue(Communicator& comm, int rank) : comm_(comm), rank_(rank) {}

  // --- The callers' side (any thread).
  // Queues a checked request (barrier: named here; join: becomes the join handle). Throws
  // CollectiveError: invalid_argument for a second GPU device, a name in flight or a request
  // after join(); the stop error once stopped; aborted while shutting down.
  void submit(Request request, std::shared_ptr<HandleState> handle, ReadyMarker ready);
  void request_shutdown(bool leaving);
  void switch_timeline(const std::string& path);  // empty: stop
  bool stopped();
  int failed_rank();  // the stop error's culprit (or the rank that shut it down): -1 if none
  bool stopped_by_failure();  // stopped because a collective failed, not by a shutdown
  // The CUDA device of this process's GPU tensors, -1 before the first.
  int gpu_device();

  // --- The engine thread's side.
  CycleInput take_cycle_input();
  // The request of that name in flight on this rank, or null. The pointer stays valid until the
  // engine thread itself removes the request (remove, stop).
  LocalRequest* find(const std::string& name);
  // Removes the request of that name; its handle, null when it is not in flight.
  std::shared_ptr<HandleState> remove(const std::string& name);
  // The join handle (null if none), and join() may be announced again.
  std::shared_ptr<HandleState> take_join_handle();
  // Marks the engine stopped with `stop_error` (what later submissions throw) and returns the
  // handles of everything pending, for the caller to fail.
  std::vector<std::shared_ptr<HandleState>> stop(const CollectiveError& stop_error, bool by_failure);
  // Work of this rank's own that a parked engine thread must wake up for.
  bool has_local_work();
  // Shutdown was requested (it wakes the engine thread wherever it waits).
  bool shutdown_requested();
  // A thread that runs cycles is about to sleep in the communicator (park), or is awake.
  // Counted: the engine thread and a thread that runs cycles for its handle may both wait.
  void park() { parked_.fetch_add(1, std::memory_order_seq_cst); }
  void unpark() { parked_.fetch_sub(1, std::memory_order_seq_cst); }

 private:
  void wake_if_parked();

  Communicator& comm_;
  const int rank_;
  std::mutex mutex_;  // guards everything below but parked_
  std::vector<LocalRequest*> incoming_;  // in in_flight_ (whose nodes do not move)
  using InFlight = std::unordered_map<std::string, LocalRequest>;
  InFlight in_flight_;
  // Removed requests' slots, reused with their name's memory (the next step's same tensors).
  static constexpr std::size_t kSpare = 4096;
  std::vector<InFlight::node_type> spare_;
  std::uint64_t barriers_ = 0;
  bool shutdown_requested_ = false;
  bool leaving_ = false;
  std::shared_ptr<HandleState> join_handle_;
  bool join_sent_ = false;
  std::optional<CollectiveError> stop_error_;  // set once stopped: what submissions throw then
  bool stopped_by_failure_ = false;
  std::optional<std::string> timeline_switch_;
  int gpu_device_ = -1;  // one per process: NCCL binds a communicator to one device
  std::atomic<int> parked_{0};
};

}  // namespace riseml::engine
