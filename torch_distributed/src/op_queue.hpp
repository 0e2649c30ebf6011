// One worker thread that runs queued jobs in order: the core's communicator is used by one
// thread at a time, and torch's callers must not block on a collective they made async.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace riseml::torch_distributed {

class OpQueue {
 public:
  OpQueue();
  // Runs what is queued, then joins the thread.
  ~OpQueue();
  OpQueue(const OpQueue&) = delete;
  OpQueue& operator=(const OpQueue&) = delete;

  // `job` must not throw (it reports through its Work).
  void push(std::function<void()> job);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace riseml::torch_distributed
