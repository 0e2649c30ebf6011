// Handle: waiting on, and reading the results of, one engine operation.
#include "device_path.hpp"
#include "handle_state.hpp"

#include <algorithm>
#include <cstring>

#include <riseml/engine/engine.hpp>

namespace riseml::engine {

namespace {
HandleState& checked(const std::shared_ptr<HandleState>& s) {
  if (!s) throw CollectiveError(ErrorKind::invalid_argument, "riseml: use of an empty handle");
  return *s;
}
}  // namespace

bool Handle::poll() const {
  HandleState& s = checked(state_);
  std::lock_guard lock(s.mutex);
  return s.done;
}

void Handle::wait() const {
  HandleState& s = checked(state_);
  if (s.runner && !s.is_done()) help_run_cycles(*s.runner, s);
  std::unique_lock lock(s.mutex);
  if (!s.done) {
    if (s.census) s.census->waiting.fetch_add(1);
    s.done_changed.wait(lock, [&] { return s.done; });
    if (s.census) s.census->waiting.fetch_sub(1);
  }
  if (s.error) throw *s.error;
}

void Handle::wait_stream_ordered() const {
  HandleState& s = checked(state_);
  if (!s.on_device) return wait();
  if (s.runner && !s.is_settled()) help_run_cycles(*s.runner, s);
  std::shared_ptr<DeviceEvent> done_at;
  {
    std::unique_lock lock(s.mutex);
    if (!s.done && !s.enqueued) {
      if (s.census) s.census->waiting.fetch_add(1);
      s.done_changed.wait(lock, [&] { return s.done || s.enqueued; });
      if (s.census) s.census->waiting.fetch_sub(1);
    }
    if (s.error) throw *s.error;
    if (!s.done) done_at = s.device_done;
  }
  if (done_at) done_at->order_stream_after(s.stream);
}

const std::vector<std::byte>& Handle::allgather_output() const { return output(0); }

std::size_t Handle::allgather_output_bytes() const {
  wait();
  if (state_->device_output) {
    std::size_t bytes = 0;
    for (std::size_t part : state_->device_output_parts) bytes += part;
    return bytes;
  }
  return state_->outputs.empty() ? 0 : state_->outputs[0].size();
}

std::size_t Handle::output_count() const {
  wait();
  return std::max(state_->outputs.size(), state_->output_shapes.size());  // device: shapes only
}

const std::vector<std::byte>& Handle::output(std::size_t i) const {
  wait();
  static const std::vector<std::byte> none;
  return i < state_->outputs.size() ? state_->outputs[i] : none;
}

const std::vector<std::int64_t>& Handle::output_shape(std::size_t i) const {
  wait();
  static const std::vector<std::int64_t> none;
  return i < state_->output_shapes.size() ? state_->output_shapes[i] : none;
}

const std::vector<std::int64_t>& Handle::received_splits() const {
  wait();
  return state_->received_splits;
}

void Handle::copy_allgather_output(void* dst, void* stream) const {
  wait();
  const HandleState& s = *state_;
  if (s.device_output) {
    if (s.copy_result)
      s.copy_result(dst, s.device_output, allgather_output_bytes(), stream, s.device_done.get());
  } else if (!s.outputs.empty() && !s.outputs[0].empty()) {
    std::memcpy(dst, s.outputs[0].data(), s.outputs[0].size());
  }
}

void Handle::copy_device_outputs(std::span<void* const> dsts, void* stream) const {
  wait();
  const HandleState& s = *state_;
  if (!s.device_output || dsts.size() != s.device_output_parts.size())
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml: " + std::to_string(dsts.size()) + " destination(s) for " +
                              (s.device_output ? std::to_string(s.device_output_parts.size()) +
                                                     " device output(s)"
                                               : std::string("a result that is not on a device")));
  std::size_t offset = 0;
  for (std::size_t i = 0; i < dsts.size(); ++i) {
    const std::size_t bytes = s.device_output_parts[i];
    if (dsts[i] && bytes && s.copy_result) {
      // An alias of the result (its owner, its deleter) at this output's start.
      std::shared_ptr<void> part(s.device_output, static_cast<std::byte*>(s.device_output.get()) + offset);
      s.copy_result(dsts[i], part, bytes, stream, s.device_done.get());
    }
    offset += bytes;
  }
}

const std::vector<std::int64_t>& Handle::output_shape() const { return output_shape(0); }

int Handle::join_result() const {
  wait();
  return state_->join_result;
}

}  // namespace riseml::engine
