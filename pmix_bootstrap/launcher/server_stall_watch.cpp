#include "server_stall_watch.hpp"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <utility>

namespace riseml::launch {

using Clock = ServerStallWatch::Clock;

std::chrono::milliseconds StallWatchSettings::interval() const {
  return std::clamp(limit / 4, std::chrono::milliseconds(1), std::chrono::milliseconds(1000));
}

// Shared with the pinging thread and with the callbacks of its requests, which may outlive the
// watch (an abandoned thread, an answer that comes late).
struct ServerStallWatch::State {
  std::shared_ptr<ServerPing> ping;
  std::mutex mutex;
  std::condition_variable changed;
  bool stopping = false;
  std::uint64_t requests = 0;  // sent so far; the last one is the one in flight, if any
  bool in_flight = false;
  Clock::time_point sent_at;

  void answered(std::uint64_t request) {
    {
      std::lock_guard lock(mutex);
      if (request == requests) in_flight = false;
    }
    changed.notify_all();
  }
};

namespace {

void say_cannot_watch(const std::string& why) {
  std::string message = "riseml-launch: cannot check that the PMIx server keeps answering (" + why +
                        "); the job runs without --pmix-stall-timeout\n";
  [[maybe_unused]] ssize_t ignored = write(STDERR_FILENO, message.data(), message.size());
}

}  // namespace

ServerStallWatch::ServerStallWatch(std::shared_ptr<ServerPing> ping, StallWatchSettings settings)
    : settings_(settings), state_(std::make_shared<State>()) {
  state_->ping = std::move(ping);
  // The thread owns a reference of its own: it may outlive the watch (see abandon()).
  thread_ = std::thread([state = state_, interval = settings_.interval()] {
    std::unique_lock lock(state->mutex);
    while (!state->stopping) {
      std::uint64_t request = ++state->requests;
      state->in_flight = true;
      state->sent_at = Clock::now();
      lock.unlock();
      std::string why;
      bool sent = state->ping->send([state, request] { state->answered(request); }, why);
      lock.lock();
      if (!sent) {
        state->in_flight = false;
        if (!state->stopping) say_cannot_watch(why);
        return;
      }
      // One request at a time: a stuck server does not pile them up.
      state->changed.wait(lock, [&] { return !state->in_flight; });
      state->changed.wait_for(lock, interval, [&] { return state->stopping; });
    }
  });
}

ServerStallWatch::~ServerStallWatch() {
  if (!stopped_) abandon();
}

bool ServerStallWatch::stalled(Clock::time_point now) {
  std::lock_guard lock(state_->mutex);
  if (!state_->in_flight || now - state_->sent_at < settings_.limit) {
    suspected_request_ = 0;
    return false;
  }
  if (suspected_request_ != state_->requests) {
    suspected_request_ = state_->requests;
    suspected_at_ = now;
    return false;
  }
  return now - suspected_at_ >= settings_.interval();
}

Clock::time_point ServerStallWatch::next_check(Clock::time_point now) const {
  std::lock_guard lock(state_->mutex);
  if (!state_->in_flight) return now + settings_.limit;  // a later request cannot be late sooner
  if (suspected_request_ == state_->requests) return suspected_at_ + settings_.interval();
  return state_->sent_at + settings_.limit;
}

void ServerStallWatch::stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->changed.notify_all();
  thread_.join();  // returns once the request in flight was answered
}

void ServerStallWatch::abandon() {
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->changed.notify_all();
  thread_.detach();
}

}  // namespace riseml::launch
