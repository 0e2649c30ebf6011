// Handle: waiting on, and reading the results of, one engine operation.
#include "device_path.hpp"
#include "handle_state.hpp"

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
  std::unique_lock lock(s.mutex);
  s.done_changed.wait(lock, [&] { return s.done; });
  if (s.error) throw *s.error;
}

const std::vector<std::byte>& Handle::allgather_output() const {
  wait();
  return state_->allgather_output;
}

std::size_t Handle::allgather_output_bytes() const {
  wait();
  return state_->device_output ? state_->device_output_bytes : state_->allgather_output.size();
}

void Handle::copy_allgather_output(void* dst, void* stream) const {
  wait();
  const HandleState& s = *state_;
  if (s.device_output) {
    copy_device_to_device(dst, s.device_output.get(), s.device_output_bytes, stream);
  } else if (!s.allgather_output.empty()) {
    std::memcpy(dst, s.allgather_output.data(), s.allgather_output.size());
  }
}

const std::vector<std::int64_t>& Handle::output_shape() const {
  wait();
  return state_->output_shape;
}

int Handle::join_result() const {
  wait();
  return state_->join_result;
}

}  // namespace riseml::engine
