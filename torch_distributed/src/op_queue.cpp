#include "op_queue.hpp"

#include <set>
#include <utility>

namespace riseml::torch_distributed {

namespace {
// Every live queue, for wait_all_idle.
std::mutex registry_mutex;
std::set<OpQueue*>& registry() {
  static auto* queues = new std::set<OpQueue*>;  // never destroyed: queues may outlive statics
  return *queues;
}
}  // namespace

OpQueue::OpQueue() : thread_([this] { run(); }) {
  std::lock_guard lock(registry_mutex);
  registry().insert(this);
}

OpQueue::~OpQueue() {
  {
    std::lock_guard lock(registry_mutex);
    registry().erase(this);
  }
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool OpQueue::wait_all_idle(std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  std::lock_guard registry_lock(registry_mutex);
  bool all = true;
  for (OpQueue* q : registry()) {
    std::unique_lock lock(q->mutex_);
    all = q->idle_.wait_until(lock, until, [q] { return !q->running_ && q->jobs_.empty(); }) && all;
  }
  return all;
}

void OpQueue::push(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void OpQueue::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return !running_ && (stopping_ || !jobs_.empty()); });
    if (jobs_.empty()) return;
    run_front(lock);
  }
}

void OpQueue::run_front(std::unique_lock<std::mutex>& lock) {
  std::function<void()> job = std::move(jobs_.front());
  jobs_.pop_front();
  running_ = true;
  lock.unlock();
  job();
  job = nullptr;  // what it captured goes now, before the queue counts as idle
  lock.lock();
  running_ = false;
  if (jobs_.empty()) idle_.notify_all();
}

void OpQueue::run_until(const std::function<bool()>& done) {
  std::unique_lock lock(mutex_);
  while (!done() && !running_ && !jobs_.empty()) run_front(lock);
  // What is left (another caller's jobs) goes back to the worker.
  if (!jobs_.empty() || stopping_) wake_.notify_one();
}

}  // namespace riseml::torch_distributed
