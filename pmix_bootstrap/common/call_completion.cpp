#include "call_completion.hpp"

namespace riseml::pmix {

CallCompletion::CallCompletion() : state_(std::make_shared<State>()) {}

void* CallCompletion::callback_data() {
  return new std::shared_ptr<State>(state_);
}

void CallCompletion::discard_callback_data(void* cbdata) {
  delete static_cast<std::shared_ptr<State>*>(cbdata);
}

void CallCompletion::on_complete(pmix_status_t status, void* cbdata) {
  std::unique_ptr<std::shared_ptr<State>> reference(static_cast<std::shared_ptr<State>*>(cbdata));
  State& state = **reference;
  {
    std::lock_guard lock(state.mutex);
    state.done = true;
    state.status = status;
  }
  state.done_changed.notify_all();
}

std::optional<pmix_status_t> CallCompletion::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock lock(state_->mutex);
  if (!state_->done_changed.wait_for(lock, timeout, [&] { return state_->done; })) {
    return std::nullopt;
  }
  return state_->status;
}

pmix_status_t CallCompletion::wait() {
  std::unique_lock lock(state_->mutex);
  state_->done_changed.wait(lock, [&] { return state_->done; });
  return state_->status;
}

}  // namespace riseml::pmix
