#include "device_watchdog.hpp"

#include <utility>

namespace riseml::torch_distributed {

DeviceWatchdog::DeviceWatchdog(DeviceWatchdogOptions options) : options_(std::move(options)) {}

DeviceWatchdog::~DeviceWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DeviceWatchdog::watch(WatchedOp op) {
  {
    std::lock_guard lock(mutex_);
    if (failure_) return;  // the communicator is aborted: nothing of it will hang
    ops_.push_back(Entry{std::move(op), std::nullopt});
    if (options_.start_thread && !thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  changed_.notify_all();  // a thread asleep with nothing to watch
}

std::optional<std::string> DeviceWatchdog::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

std::size_t DeviceWatchdog::watched() const {
  std::lock_guard lock(mutex_);
  return ops_.size();
}

bool DeviceWatchdog::drain(std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  std::unique_lock lock(mutex_);
  for (;;) {
    if (failure_) return false;  // (it drops the ops it watched)
    if (ops_.empty()) return true;
    if (Clock::now() >= deadline) return false;
    changed_.wait_for(lock, options_.period);
  }
}

void DeviceWatchdog::check(Clock::time_point now) {
  std::string why;
  // An event's query, without our lock (a CUDA call may block behind the driver): failed fills
  // `why` (never empty), else `why` stays empty.
  auto ask = [&](const std::function<Progress(std::string*)>& query) {
    why.clear();
    const Progress p = query(&why);
    if (p != Progress::failed)
      why.clear();
    else if (why.empty())
      why = "the device reported an error";
    return p;
  };
  bool any_left = false;
  for (;;) {
    Entry* oldest = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (failure_) return;
      if (ops_.empty()) break;
      // Only this thread pops or clears, and a deque's push_back keeps its elements in place.
      oldest = &ops_.front();
    }
    any_left = true;
    if (!oldest->started_at) {
      const Progress p = ask(oldest->op.started);
      if (p != Progress::done) break;  // failed, or the caller's own work before it: no clock
      std::lock_guard lock(mutex_);
      oldest->started_at = now;
    }
    const Progress p = ask(oldest->op.finished);
    if (p == Progress::failed) break;
    if (p == Progress::done) {
      std::lock_guard lock(mutex_);
      ops_.pop_front();
      any_left = false;
      continue;
    }
    if (now - *oldest->started_at > options_.timeout)
      why = "a collective on the device made no progress within " +
            std::to_string(options_.timeout.count()) +
            " ms of starting (a peer dead, stopped, or in another collective)";
    break;
  }
  // The communicator's health, also without our lock: its owner may hold its own lock while it
  // calls watch().
  if (why.empty() && (!any_left || !options_.healthy || options_.healthy(&why))) {
    changed_.notify_all();
    return;
  }
  if (why.empty()) why = "the device's communicator failed";
  {
    std::lock_guard lock(mutex_);
    if (failure_) return;
    failure_ = why;
    ops_.clear();
  }
  changed_.notify_all();
  if (options_.on_failure) options_.on_failure(why);
}

void DeviceWatchdog::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (ops_.empty()) {  // nothing in flight: asleep until an op comes (no wake-ups when idle)
      changed_.wait(lock, [&] { return stopping_ || !ops_.empty(); });
      continue;
    }
    changed_.wait_for(lock, options_.period, [&] { return stopping_; });
    if (stopping_) return;
    lock.unlock();
    check(Clock::now());
    lock.lock();
  }
}

}  // namespace riseml::torch_distributed
