// The ServerPing of riseml-launch's embedded PMIx server: registers a process-local event
// handler for a status code nothing ever raises, and removes it again. Given a callback,
// libpmix 4.2.2 does both on its progress thread - the thread that serves every client
// connection and request - and calls back from there (checked in pmix_event_registration.c
// and by experiment), so the answer proves that thread alive. Nothing leaves the process (the
// range is PMIX_RANGE_PROC_LOCAL, and a server tells its host only of environmental events)
// and nothing is left behind: each ping ends with the handler gone.
//
// Chosen over PMIx_Notify_event (notifications are cached for later handlers, and reach
// clients unless the range is right) and PMIx_server_setup_local_support (meant to run once
// per job before its ranks start).
#pragma once

#include "server_stall_watch.hpp"

namespace riseml::launch {

class PmixProgressPing final : public ServerPing {
 public:
  // Needs a PmixHostServer.
  bool send(std::function<void()> pong, std::string& why) override;
};

}  // namespace riseml::launch
