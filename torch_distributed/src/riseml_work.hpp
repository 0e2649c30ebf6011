// The Work a riseml operation returns: completed by the worker thread with the output tensors
// (which is what getFuture()'s value is: DDP's comm hooks read it) or with the error.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "op_queue.hpp"

namespace riseml::torch_distributed {

class RisemlWork : public c10d::Work {
 public:
  // `queue`: where its job waits; wait() without a timeout runs the queue itself when it can.
  // `devices`: a device op's (the future is CUDA-aware then, as ProcessGroupNCCL's).
  RisemlWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
             std::weak_ptr<OpQueue> queue, std::vector<c10::Device> devices = {});

  // A device op: what wait() does once the op is queued on the device (torch's current stream
  // waits for it). Set before the job can run.
  void set_after_wait(std::function<void()> after_wait) { after_wait_ = std::move(after_wait); }
  // A device op: whether the device has done it, once queued (isCompleted asks it).
  void set_device_finished(std::function<bool()> finished) {
    device_finished_ = std::move(finished);
  }

  // Queued and, for a device op, done by the device (or failed), as torch's nccl Work says.
  bool isCompleted() override;
  bool wait(std::chrono::milliseconds timeout = ::kNoTimeout) override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  void succeed();
  // A receive from any rank: `source` is what sourceRank() then says.
  void succeed_from(int source);
  int sourceRank() const override;
  void fail(std::exception_ptr error);

 private:
  std::vector<at::Tensor> outputs_;
  std::weak_ptr<OpQueue> queue_;
  std::function<void()> after_wait_;
  std::function<bool()> device_finished_;
  std::atomic<int> source_{-1};
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace riseml::torch_distributed
