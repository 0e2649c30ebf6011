// Waits, with a deadline, for the callback of a non-blocking PMIx call. The callback may come
// after the waiter gave up, so the state is shared and the callback's reference lives on the
// heap until the callback runs.
#pragma once

#include <pmix_common.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>

namespace riseml::pmix {

class CallCompletion {
 public:
  CallCompletion();

  // cbfunc/cbdata for a PMIx *_nb call taking a pmix_op_cbfunc_t; each pair is good for one call.
  static void on_complete(pmix_status_t status, void* cbdata);
  void* callback_data();
  // For a call that failed to start: the callback will never run, so take its reference back.
  static void discard_callback_data(void* cbdata);

  // The call's status, or nullopt when it did not complete within `timeout`.
  std::optional<pmix_status_t> wait_for(std::chrono::milliseconds timeout);
  // For calls whose arguments PMIx reads until the callback: giving up early is not an option.
  pmix_status_t wait();

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable done_changed;
    bool done = false;
    pmix_status_t status = PMIX_SUCCESS;
  };
  std::shared_ptr<State> state_;
};

}  // namespace riseml::pmix
