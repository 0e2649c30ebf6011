// Handle: waiting on, and reading the results of, one engine operation.
#include "handle_state.hpp"

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

const std::vector<std::int64_t>& Handle::output_shape() const {
  wait();
  return state_->output_shape;
}

int Handle::join_result() const {
  wait();
  return state_->join_result;
}

}  // namespace riseml::engine
