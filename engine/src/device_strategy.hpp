// Collectives of GPU tensors through the DevicePath (NCCL): a fusion bucket of allreduces as one
// device collective, a grouped reducescatter as one, broadcast, allgather and alltoall (their
// results stay on the device, in the handle, until the caller copies them out).
// The path is built collectively at the first device entry every rank runs (the same cycle on
// every rank), on this process's GPU, and released when the engine thread ends.
// Stream-ordered: an entry leaves the table once its work is enqueued (the handle then carries
// the point after it, for the caller's stream to wait on); the path's watcher completes the
// handle when the device gets there, and the timeline event ends then.
#pragma once

#include "device_path.hpp"
#include "strategy.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace riseml::engine {

class DeviceStrategy final : public Strategy {
 public:
  explicit DeviceStrategy(const ExecutionContext& context) : context_(context) {}
  ~DeviceStrategy() override { path_.reset(); }
  DeviceStrategy(const DeviceStrategy&) = delete;
  DeviceStrategy& operator=(const DeviceStrategy&) = delete;

  void allreduce(const std::vector<TableEntry*>& bucket, Clock::time_point start) override;
  // Runs the entry and finishes it (the executor must not): returns its bytes.
  std::size_t run(TableEntry& entry, LocalRequest* mine) override;
  // Writes the timeline events of the device work the watcher saw complete since the last call;
  // throws the path's asynchronous failure, if any (the engine then stops, naming it).
  void collect_completions();
  // Tears the path down: the work in flight completes first, or (`failed`, the engine stopped
  // after an error) fails with it.
  void release(const std::optional<CollectiveError>& failed);

 private:
  // `mine`: this rank's first request of the entries at hand, which names the device.
  DevicePath& path(const LocalRequest* mine);
  // Ends `entries` on this rank now that their work is enqueued: the handles get the point
  // after it and complete (or fail) when the watcher sees the device there.
  void finish_when_done(const std::vector<TableEntry*>& entries, const char* phase,
                        Clock::time_point start, std::size_t bytes);
  // The operations of run(): enqueue the entry's work on `p` (`mine` null: this rank joined).
  void reducescatter(DevicePath& p, const TableEntry& entry, const LocalRequest* mine);
  void broadcast(DevicePath& p, const TableEntry& entry, const LocalRequest* mine);
  void allgather(DevicePath& p, const TableEntry& entry, LocalRequest* mine);
  void alltoall(DevicePath& p, const TableEntry& entry, LocalRequest* mine);
  // Hands a device result to mine's handle, with the path's copier: one part per output, of
  // `bytes[i]` and `shapes[i]`, end to end in `out`.
  void keep_result(DevicePath& p, LocalRequest& mine, std::shared_ptr<void> out,
                   std::vector<std::size_t> bytes, std::vector<std::vector<std::int64_t>> shapes);
  // A rule of the GPU path the entries break (the same on every rank: the metadata agree).
  bool refused(const std::vector<TableEntry*>& entries);

  struct Completed {
    std::vector<std::string> names;
    const char* phase;
    Clock::time_point start, end;
    std::size_t bytes;
  };

  ExecutionContext context_;
  std::mutex completed_mutex_;  // the watcher adds, the engine thread writes them out
  std::vector<Completed> completed_;
  // Last: its watcher, which adds to completed_, ends first.
  std::unique_ptr<DevicePath> path_;
};

}  // namespace riseml::engine
