#include "coalesced_work.hpp"

#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <utility>

namespace riseml::torch_distributed {

namespace {

#if RISEML_TORCH_MAJOR >= 2
constexpr c10d::OpType kCoalesced = c10d::OpType::COALESCED;
#else
constexpr c10d::OpType kCoalesced = c10d::OpType::UNKNOWN;  // torch 1.13 has no such type
#endif

// The devices of the block's futures (a device op's future is CUDA-aware): the block's future is
// too, so that a callback or wait on it is ordered after the ops on the device, not only after
// their being queued. c10's future runs a callback on a stream that waits for the events of the
// future it hangs on, so the last op's callback completes ours on such a stream.
std::vector<c10::Device> devices_of(const std::vector<c10::intrusive_ptr<c10d::Work>>& works) {
  std::vector<c10::Device> devices;
  for (const auto& w : works)
    for (const c10::Device& d : w->getFuture()->devices())
      if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
  return devices;
}

}  // namespace

CoalescedWork::CoalescedWork(int rank, std::vector<c10::intrusive_ptr<c10d::Work>> works)
    : c10d::Work(rank, kCoalesced),
      works_(std::move(works)),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()), devices_of(works_))) {}

c10::intrusive_ptr<CoalescedWork> CoalescedWork::create(
    int rank, std::vector<c10::intrusive_ptr<c10d::Work>> works) {
  auto self = c10::make_intrusive<CoalescedWork>(rank, std::move(works));
  if (self->works_.empty()) {
    self->future_->markCompleted(c10::IValue(std::vector<at::Tensor>{}));
    self->finish();
    return self;
  }
  // Each callback holds the work, so that the last one can complete it after its owner let go.
  auto left = std::make_shared<std::atomic<std::size_t>>(self->works_.size());
  for (const auto& w : self->works_) {
    w->getFuture()->addCallback([left, self](c10::ivalue::Future&) {
      if (--*left != 0) return;
      for (const auto& done : self->works_)  // the first error in the block's order
        if (done->getFuture()->hasError()) {
          const std::exception_ptr error = done->getFuture()->exception_ptr();
          self->future_->setError(error);
          self->finish(error);
          return;
        }
      self->future_->markCompleted(c10::IValue(self->result()));
      self->finish();
    });
  }
  return self;
}

bool CoalescedWork::isCompleted() {
  if (!c10d::Work::isCompleted()) return false;
  if (exception()) return true;
  return std::all_of(works_.begin(), works_.end(), [](const auto& w) { return w->isCompleted(); });
}

bool CoalescedWork::wait(std::chrono::milliseconds timeout) {
  for (const auto& w : works_) w->wait(timeout);  // throws the op's error
  return c10d::Work::wait(timeout);
}

std::vector<at::Tensor> CoalescedWork::result() {
  std::vector<at::Tensor> all;
  for (const auto& w : works_)
    for (const at::Tensor& t : w->result()) all.push_back(t);
  return all;
}

}  // namespace riseml::torch_distributed
