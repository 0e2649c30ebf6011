// One worker thread that runs queued jobs in order: the core's communicator is used by one
// thread at a time, and torch's callers must not block on a collective they made async.
// A caller that waits for its job (Work::wait) runs the queue itself while the worker is not in
// a job: handing a small collective to the worker and back costs two wake-ups, 45 us each on a
// VM when the threads sit on different CPUs (the engine does the same: cycle_runner.hpp).
#pragma once

#include <chrono>
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
  // For a thread that waits until `done()`: while the worker is not in a job, runs the queued
  // jobs in order itself until `done()` (asked under the queue's mutex) or the queue is empty;
  // returns at once when the worker is in a job. Jobs still run one at a time, in order.
  void run_until(const std::function<bool()>& done);

  // Waits until every queue of the process is idle: nothing queued, no job running, and every
  // finished job destroyed with what it captured (tensors, Works), or until `limit` passes.
  // Returns whether they all were. For the interpreter's exit: a worker that drops the last
  // reference to a tensor whose Python object torch preserved needs the GIL, and a thread that
  // asks for the GIL while Python finalizes is ended by pthread_exit, which aborts the process.
  static bool wait_all_idle(std::chrono::milliseconds limit);

 private:
  void run();
  // With `lock` held: runs the first job with the lock released, marked running meanwhile.
  void run_front(std::unique_lock<std::mutex>& lock);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;  // a job ended (and was destroyed) with nothing queued
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  bool running_ = false;  // a job runs (on the worker or on a waiting caller)
  std::thread thread_;
};

}  // namespace riseml::torch_distributed
