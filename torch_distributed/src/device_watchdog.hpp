// Watches the device work a process group queued on its stream, for the group's timeout. The
// backend's device ops complete their Work once queued (stream-ordered, as torch's nccl does),
// so without a watcher a dead or stopped peer would leave NCCL's kernels, and every stream
// that waits on them, spinning for ever. The stream runs its ops in order, so only the oldest
// can be held up by a peer; its clock starts once it has started on the device (the caller's
// work before it and the ops before it done: a busy GPU is not a dead peer). A timeout, an op
// whose progress query fails, or an unhealthy communicator (NCCL's asynchronous error: a peer
// failed) makes the watchdog fail: it calls on_failure once, from its own thread and without
// its lock held, with the reason; failure() says it from then on.
// CUDA-free: the ops' progress and the communicator's health come as functions (cudaEventQuery
// and ncclCommGetAsyncError in the GPU path, fakes in the tests).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace riseml::torch_distributed {

enum class Progress { pending, done, failed };

struct WatchedOp {
  // The op's work has begun on the device (an event recorded before it); `why` on failed.
  std::function<Progress(std::string* why)> started;
  // The op's work has ended on the device (an event recorded after it).
  std::function<Progress(std::string* why)> finished;
};

struct DeviceWatchdogOptions {
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  std::chrono::milliseconds period{10};  // how often the thread looks
  // False with the reason when the communicator failed (asked only while ops are watched).
  std::function<bool(std::string* why)> healthy;
  std::function<void(const std::string& why)> on_failure;
  bool start_thread = true;  // false: the tests call check() with their own clock
};

class DeviceWatchdog {
 public:
  using Clock = std::chrono::steady_clock;

  explicit DeviceWatchdog(DeviceWatchdogOptions options);
  // Stops the thread; ops still watched are dropped unwatched.
  ~DeviceWatchdog();
  DeviceWatchdog(const DeviceWatchdog&) = delete;
  DeviceWatchdog& operator=(const DeviceWatchdog&) = delete;

  // After the op was queued, in queue order. The thread starts at the first.
  void watch(WatchedOp op);
  // The reason the watchdog failed, once it has.
  std::optional<std::string> failure() const;
  // Waits until every watched op finished or the watchdog failed, at most `limit`: true when
  // every op finished.
  bool drain(std::chrono::milliseconds limit);
  std::size_t watched() const;

  // One look (the thread's, every period; the tests' with their clock).
  void check(Clock::time_point now);

 private:
  struct Entry {
    WatchedOp op;
    std::optional<Clock::time_point> started_at;
  };
  void loop();

  DeviceWatchdogOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Entry> ops_;
  std::optional<std::string> failure_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace riseml::torch_distributed
