#include "pmix_progress_ping.hpp"

#include <pmix.h>

#include <memory>
#include <utility>

#include "pmix_info_list.hpp"
#include "pmix_status_text.hpp"

namespace riseml::launch {

namespace {

// A code of our own (PMIx leaves those below PMIX_EXTERNAL_ERR_BASE to its users) that no
// event carries, so the handler is never run.
constexpr pmix_status_t kPingStatus = PMIX_EXTERNAL_ERR_BASE - 7031;

// One ping, from its registration until the handler is gone again.
struct Ping {
  std::function<void()> pong;
  pmix::InfoArray directives;  // PMIx reads them until the registration completes
};

void never_run(size_t, pmix_status_t, const pmix_proc_t*, pmix_info_t[], size_t, pmix_info_t[],
               size_t, pmix_event_notification_cbfunc_fn_t cbfunc, void* cbdata) {
  if (cbfunc != nullptr) cbfunc(PMIX_EVENT_ACTION_COMPLETE, nullptr, 0, nullptr, nullptr, cbdata);
}

// On the progress thread, like on_registered.
void on_deregistered(pmix_status_t, void* cbdata) {
  std::unique_ptr<Ping> ping(static_cast<Ping*>(cbdata));
  ping->pong();
}

// On the progress thread. Deregistering only queues the removal there (it is non-blocking
// with a callback), so it is allowed here.
void on_registered(pmix_status_t status, size_t handler, void* cbdata) {
  if (status == PMIX_SUCCESS &&
      PMIx_Deregister_event_handler(handler, on_deregistered, cbdata) == PMIX_SUCCESS) {
    return;
  }
  on_deregistered(status, cbdata);  // the thread answered all the same
}

}  // namespace

bool PmixProgressPing::send(std::function<void()> pong, std::string& why) {
  auto ping = std::make_unique<Ping>(Ping{
      std::move(pong), pmix::InfoList().add_range(PMIX_RANGE, PMIX_RANGE_PROC_LOCAL).finish()});
  pmix_status_t code = kPingStatus;  // copied by PMIx
  pmix_status_t status =
      PMIx_Register_event_handler(&code, 1, ping->directives.data(), ping->directives.size(),
                                  never_run, on_registered, ping.get());
  if (status != PMIX_SUCCESS) {
    why = "PMIx_Register_event_handler failed: " + pmix::describe_status(status);
    return false;
  }
  ping.release();  // the callbacks own it now
  return true;
}

}  // namespace riseml::launch
