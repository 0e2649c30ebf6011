// The Work of a coalescing block (endCoalescing): done when every op of the block is, failed
// with the first of their errors in the block's order. wait() waits for each in turn, so each
// does what its own wait does (a device op's makes torch's current stream wait for it). Its
// future's value is every op's outputs, in the block's order; it is CUDA-aware when the ops'
// are.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <vector>

namespace riseml::torch_distributed {

class CoalescedWork : public c10d::Work {
 public:
  static c10::intrusive_ptr<CoalescedWork> create(
      int rank, std::vector<c10::intrusive_ptr<c10d::Work>> works);
  CoalescedWork(int rank, std::vector<c10::intrusive_ptr<c10d::Work>> works);  // use create()

  bool wait(std::chrono::milliseconds timeout = ::kNoTimeout) override;
  // Every op of the block completed (a device op's: done by the device), or one failed.
  bool isCompleted() override;
  std::vector<at::Tensor> result() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  std::vector<c10::intrusive_ptr<c10d::Work>> works_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace riseml::torch_distributed
