// The engine thread and the state it shares with the callers of Engine.
#pragma once

#include "device_path.hpp"
#include "handle_state.hpp"
#include "timeline.hpp"
#include "wire.hpp"

#include <riseml/communicator.hpp>
#include <riseml/engine/engine.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

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
  void shutdown();
  bool stopped();
  // Empty: stop. The path is tried here (so the caller sees a bad one); the engine thread
  // switches at its next cycle.
  void set_timeline(const std::string& path);

 private:
  // A request submitted on this rank and not finished.
  struct Local {
    Request request;
    std::shared_ptr<HandleState> handle;
    Clock::time_point enqueued;
    ReadyMarker ready;  // device tensors: ready after this point of the caller's stream
  };
  // A name some rank submitted, with each rank's metadata once it did.
  struct Global {
    std::string name;
    std::vector<std::optional<TensorMeta>> metas;
    Clock::time_point first_seen;
    bool warned = false;
    bool verdict_sent = false;
  };
  struct CacheEntry {
    std::string name;
    std::vector<std::optional<TensorMeta>> metas;
  };

  void validate(const Request& r) const;
  void run();
  // The idle wait: parked while no rank has anything pending.
  void wake_if_parked();
  bool has_local_work();
  bool globally_idle() const;
  bool cycle();  // false: the engine stops
  bool is_ready(const Global& g) const;
  std::optional<CollectiveError> check_join_rule(const Global& g) const;
  // Whether one of `ranks` has submitted a collective other than a barrier that is pending.
  bool busy_elsewhere(const std::vector<int>& ranks, const Global& barrier) const;
  std::optional<CollectiveError> check_agreement(const Global& g) const;
  const TensorMeta& reference(const Global& g) const;
  void execute_allreduces(const std::vector<Global*>& entries, Clock::time_point ready_at);
  void execute_fused(const std::vector<Global*>& bucket, Clock::time_point ready_at);
  // An allgather's elements per rank, rows and elements in all.
  struct GatherLayout {
    std::vector<std::size_t> counts;
    std::int64_t rows = 0;
    std::size_t total = 0;
  };
  GatherLayout gather_layout(const Global& g) const;
  void execute_other(Global& g, Clock::time_point ready_at);
  // Host collectives whose results differ in shape per rank (engine_scatter.cpp); each returns
  // the bytes it moved, for the timeline. `l`: this rank's request.
  std::size_t execute_allgather(Global& g, Local* l);
  std::size_t execute_reducescatter(Global& g, Local* l);
  std::size_t execute_alltoall(Global& g, Local* l);
  void execute_fused_device(const std::vector<Global*>& bucket, Clock::time_point ready_at);
  void execute_other_device(Global& g);
  // Tensor i of this rank's request `l`; a joined rank (l null) has no buffers.
  static DeviceTensor device_tensor(const Local* l, std::size_t i, std::size_t count);
  // Built at the first device request every rank runs (collective, in the same cycle).
  DevicePath& device_path(const Local* l);
  void finish(Global& g, const std::optional<CollectiveError>& error);
  void check_stalls(Clock::time_point now, bool progressed);
  // This rank's say for deadlock detection: a thread has waited on one of the engine's handles,
  // with none finishing, for deadlock_shutdown.
  bool locally_stuck(Clock::time_point now);
  void stop_all(const CollectiveError& error);
  Local* local(const std::string& name);
  void trace_negotiation(const std::string& name, Clock::time_point ready_at,
                         Clock::time_point start);

  int rank_;
  int size_;
  EngineOptions options_;
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<DevicePath> device_;  // released by the engine thread when it ends

  // Shared with the callers, under mutex_.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::string> incoming_;
  std::unordered_map<std::string, Local> in_flight_;
  std::uint64_t barriers_ = 0;
  bool shutdown_requested_ = false;
  std::shared_ptr<HandleState> join_handle_;
  bool stopped_ = false;
  std::atomic<bool> parked_{false};
  // A parked engine still cycles this often (a peer that died while all were idle is found).
  static constexpr std::chrono::milliseconds kIdleWait{1000};
  int gpu_device_ = -1;  // the CUDA device of this rank's GPU tensors (one per process)
  std::optional<CollectiveError> stop_error_;
  // A timeline switch for the engine thread (empty path: stop), under mutex_.
  std::optional<std::string> timeline_switch_;

  // The engine thread's own.
  std::map<std::uint64_t, Global> table_;
  std::unordered_map<std::string, std::uint64_t> table_index_;
  std::uint64_t next_seq_ = 0;
  std::vector<CacheEntry> cache_;
  std::unordered_map<std::string, std::uint32_t> cache_index_;
  std::vector<bool> joined_;
  // Deadlock detection (check_stalls): this process's waits on the engine's handles; since when
  // a thread has waited with no handle finishing; each rank's say on it this cycle.
  std::shared_ptr<WaitCensus> census_ = std::make_shared<WaitCensus>();
  std::uint64_t census_finished_seen_ = 0;
  std::optional<Clock::time_point> stuck_since_;
  std::vector<bool> stuck_;
  int last_joined_ = -1;
  bool join_sent_ = false;
  std::vector<StallVerdict> stall_outbox_;
  std::vector<std::byte> fusion_buffer_;
  Timeline timeline_;

  std::thread thread_;
};

}  // namespace riseml::engine
