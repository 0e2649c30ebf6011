// The engine thread: each cycle it takes what this rank's callers submitted (TensorQueue),
// exchanges it with the other ranks (Negotiator, into the tensor table), fails what breaks the
// rules (agreement) or what rank 0 found stalled (StallInspector), runs what is ready
// (Executor) and completes the join; when nothing is pending anywhere it parks until there is.
// Engine is its public face.
#pragma once

#include "cycle_runner.hpp"
#include "executor.hpp"
#include "finisher.hpp"
#include "negotiator.hpp"
#include "stall_inspector.hpp"
#include "tensor_queue.hpp"
#include "timeline.hpp"

#include <riseml/communicator.hpp>
#include <riseml/engine/engine.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace riseml::engine {

class EngineLoop {
 public:
  using Clock = std::chrono::steady_clock;

  EngineLoop(Rendezvous& rendezvous, const CommunicatorOptions& communicator_options,
             const EngineOptions& options);
  ~EngineLoop();

  int rank() const { return rank_; }
  int size() const { return size_; }
  Handle enqueue(Request request);
  void shutdown(bool leaving = false);
  bool stopped() { return queue_.stopped(); }
  int failed_rank() { return queue_.failed_rank(); }
  bool failed() { return queue_.stopped_by_failure(); }
  // Empty: stop. The path is tried here (so the caller sees a bad one); the engine thread
  // switches at its next cycle.
  void set_timeline(const std::string& path);
  // A thread blocked on `handle`, holding the runner's mutex: runs cycles until the handle is
  // done or the engine ends (see cycle_runner.hpp).
  void run_cycles_until_done(HandleState& handle);

 private:
  void run();
  // With the runner's mutex held: one cycle, planned as the engine thread would plan it;
  // false once the engine has ended (a shutdown, or an error: every handle failed).
  bool run_one_cycle();
  bool cycle();  // false: the engine stops
  // `links_guard`: the runner's mutex when the waiting thread does not hold it.
  void wait_between_cycles(Clock::time_point next, bool awaited, std::mutex* links_guard);
  // The same on every rank: nothing pending anywhere, nobody joined, no stall verdict to send.
  bool globally_idle() const;
  // With the runner's mutex held: the engine has ended with `error` (every handle fails).
  void end_with(const CollectiveError& error);
  // `by_failure`: a collective failed (not a shutdown); Engine::failed() tells it.
  void stop_all(const CollectiveError& error, bool by_failure = true);

  EngineOptions options_;
  std::unique_ptr<Communicator> comm_;
  int rank_;
  int size_;
  TensorQueue queue_;
  Negotiator negotiator_;
  StallInspector stalls_;
  Finisher finisher_;
  Timeline timeline_;
  Executor executor_;
  std::shared_ptr<CycleRunner> runner_ = std::make_shared<CycleRunner>();
  // Guarded by the runner's mutex: the state the next cycle is planned from.
  bool idle_ = false;                // nothing pending on any rank after the last cycle
  // The last cycle ran GPU work: the engine thread waits out the cycle time before it parks
  // (run(): a GPU cycle only enqueues, so a cycle per submission would split a backward pass
  // into an NCCL call per gradient). The same on every rank (the same table).
  bool ran_device_work_ = false;
  Clock::time_point planned_{};      // when the last cycle was planned to start
  // When the next cycle is due (Horovod's cycle time after the last one's plan).
  Clock::time_point next_cycle_due() const { return planned_ + options_.cycle_time; }
  std::uint64_t cycles_ = 0;         // cycles run, by any thread
  std::atomic<bool> ended_{false};
  std::atomic<bool> resume_{false};  // a helper left work behind: the engine thread goes on
  std::thread thread_;
};

}  // namespace riseml::engine
