#include "op_queue.hpp"

#include <utility>

namespace riseml::torch_distributed {

OpQueue::OpQueue() : thread_([this] { run(); }) {}

OpQueue::~OpQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
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
  lock.lock();
  running_ = false;
}

void OpQueue::run_until(const std::function<bool()>& done) {
  std::unique_lock lock(mutex_);
  while (!done() && !running_ && !jobs_.empty()) run_front(lock);
  // What is left (another caller's jobs) goes back to the worker.
  if (!jobs_.empty() || stopping_) wake_.notify_one();
}

}  // namespace riseml::torch_distributed
