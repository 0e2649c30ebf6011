#include "tensor_queue.hpp"

#include "naming.hpp"

#include <tuple>
#include <utility>

namespace riseml::engine {

void TensorQueue::submit(Request request, std::shared_ptr<HandleState> handle, ReadyMarker ready) {
  const int device = request.tensors.empty() ? -1 : request.tensors.front().device;
  {
    std::lock_guard lock(mutex_);
    if (device >= 0) {
      // NCCL binds a communicator to one device: every GPU tensor of a process on that one.
      if (gpu_device_ >= 0 && gpu_device_ != device)
        throw CollectiveError(ErrorKind::invalid_argument,
                              "riseml: " + std::string(kind_name(request.kind)) + " '" +
                                  request.name + "' on rank " + std::to_string(rank_) +
                                  ": a tensor on CUDA device " + std::to_string(device) +
                                  ", but this process's earlier GPU tensors were on device " +
                                  std::to_string(gpu_device_) +
                                  "; use one GPU per process (torch.cuda.set_device(local_rank))");
      gpu_device_ = device;
    }
    if (stop_error_) throw *stop_error_;
    if (shutdown_requested_)
      throw CollectiveError(ErrorKind::aborted, "riseml: the engine is shutting down");
    if (request.kind == OpKind::join) {
      if (join_handle_)
        throw CollectiveError(ErrorKind::invalid_argument,
                              "riseml: join called again on rank " + std::to_string(rank_) +
                                  " before the previous join completed");
      join_handle_ = std::move(handle);
    } else {
      if (join_handle_)
        throw CollectiveError(ErrorKind::invalid_argument,
                              "riseml: " + std::string(kind_name(request.kind)) + " '" +
                                  request.name + "' submitted on rank " + std::to_string(rank_) +
                                  " after join(); wait for the join to complete first");
      if (request.kind == OpKind::barrier) request.name = "barrier." + std::to_string(barriers_++);
      auto in_flight_already = [&] {
        return CollectiveError(ErrorKind::invalid_argument,
                               "riseml: a tensor named '" + request.name + "' is already in flight on rank " +
                                   std::to_string(rank_) + "; names must be unique until completed");
      };
      InFlight::iterator slot;
      if (spare_.empty()) {
        bool inserted;
        std::tie(slot, inserted) = in_flight_.try_emplace(request.name);
        if (!inserted) throw in_flight_already();
      } else {
        InFlight::node_type node = std::move(spare_.back());
        spare_.pop_back();
        node.key().assign(request.name);
        auto placed = in_flight_.insert(std::move(node));
        if (!placed.inserted) {
          spare_.push_back(std::move(placed.node));
          throw in_flight_already();
        }
        slot = placed.position;
      }
      slot->second = LocalRequest{std::move(request), std::move(handle), Clock::now(), std::move(ready)};
      incoming_.push_back(&slot->second);
    }
  }
  wake_if_parked();
}

void TensorQueue::request_shutdown(bool leaving) {
  {
    std::lock_guard lock(mutex_);
    shutdown_requested_ = true;
    leaving_ = leaving_ || leaving;
  }
  comm_.interrupt_wait();
}

void TensorQueue::switch_timeline(const std::string& path) {
  {
    std::lock_guard lock(mutex_);
    timeline_switch_ = path;
  }
  wake_if_parked();
}

bool TensorQueue::stopped() {
  std::lock_guard lock(mutex_);
  return stop_error_.has_value();
}

int TensorQueue::failed_rank() {
  std::lock_guard lock(mutex_);
  return stop_error_ ? stop_error_->culprit_rank() : -1;
}

bool TensorQueue::stopped_by_failure() {
  std::lock_guard lock(mutex_);
  return stop_error_.has_value() && stopped_by_failure_;
}

int TensorQueue::gpu_device() {
  std::lock_guard lock(mutex_);
  return gpu_device_;
}

CycleInput TensorQueue::take_cycle_input() {
  CycleInput in;
  std::lock_guard lock(mutex_);
  in.timeline = std::exchange(timeline_switch_, std::nullopt);
  in.fresh.swap(incoming_);
  incoming_.reserve(in.fresh.size());  // a step hands over as many again
  in.shutdown = shutdown_requested_;
  in.leaving = leaving_;
  if (join_handle_ && !join_sent_) {
    in.join = true;
    join_sent_ = true;
  }
  return in;
}

LocalRequest* TensorQueue::find(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = in_flight_.find(name);
  return it == in_flight_.end() ? nullptr : &it->second;
}

std::shared_ptr<HandleState> TensorQueue::remove(const std::string& name) {
  std::lock_guard lock(mutex_);
  InFlight::node_type node = in_flight_.extract(name);
  if (!node) return nullptr;
  std::shared_ptr<HandleState> handle = std::move(node.mapped().handle);
  node.mapped() = LocalRequest{};  // the caller's buffers and marker are let go of now
  if (spare_.size() < kSpare) spare_.push_back(std::move(node));
  return handle;
}

std::shared_ptr<HandleState> TensorQueue::take_join_handle() {
  std::lock_guard lock(mutex_);
  join_sent_ = false;
  return std::exchange(join_handle_, nullptr);
}

std::vector<std::shared_ptr<HandleState>> TensorQueue::stop(const CollectiveError& stop_error,
                                                            bool by_failure) {
  std::vector<std::shared_ptr<HandleState>> handles;
  std::lock_guard lock(mutex_);
  stop_error_ = stop_error;
  stopped_by_failure_ = by_failure;
  for (auto& [name, l] : in_flight_) handles.push_back(l.handle);
  in_flight_.clear();
  incoming_.clear();
  if (join_handle_) handles.push_back(std::exchange(join_handle_, nullptr));
  return handles;
}

bool TensorQueue::shutdown_requested() {
  std::lock_guard lock(mutex_);
  return shutdown_requested_;
}

bool TensorQueue::has_local_work() {
  std::lock_guard lock(mutex_);
  return !incoming_.empty() || timeline_switch_ || shutdown_requested_ || (join_handle_ && !join_sent_);
}

void TensorQueue::wake_if_parked() {
  // Seen parked (after the work was queued under the mutex): it may not have seen the work, so
  // wake it. Seen not parked: it looks at the queue before it parks.
  if (parked_.load(std::memory_order_seq_cst) > 0) comm_.interrupt_wait();
}

}  // namespace riseml::engine
