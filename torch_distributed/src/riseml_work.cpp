#include "riseml_work.hpp"

#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>

#include <utility>

namespace riseml::torch_distributed {

RisemlWork::RisemlWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
                       std::weak_ptr<OpQueue> queue, std::vector<c10::Device> devices)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      queue_(std::move(queue)),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()), std::move(devices))) {}

bool RisemlWork::wait(std::chrono::milliseconds timeout) {
  // With a timeout the wait must be able to give up: the job is left to the worker.
  if (timeout == ::kNoTimeout)
    if (std::shared_ptr<OpQueue> queue = queue_.lock())
      queue->run_until([this] { return c10d::Work::isCompleted(); });
  const bool done = c10d::Work::wait(timeout);  // throws the op's error
  if (done && after_wait_) after_wait_();
  return done;
}

bool RisemlWork::isCompleted() {
  if (!c10d::Work::isCompleted()) return false;
  if (!device_finished_ || exception()) return true;
  return device_finished_();
}

void RisemlWork::succeed() {
  // The future first: a thread woken by wait() may read the future at once.
  future_->markCompleted(c10::IValue(outputs_));
  finish();
}

void RisemlWork::succeed_from(int source) {
  source_ = source;
  succeed();
}

int RisemlWork::sourceRank() const {
  const int source = source_;
  if (source < 0) return c10d::Work::sourceRank();  // throws: not a receive from any rank
  return source;
}

void RisemlWork::fail(std::exception_ptr error) {
  future_->setError(error);
  finish(error);
}

}  // namespace riseml::torch_distributed
