// riseml-launch as a PMIx server host: PMIx_server_init with the module of callbacks the PMIx
// library calls into. Only what a single-machine job needs is implemented: fence_nb (which the
// library uses only for fences spanning servers) and abort.
#pragma once

#include <string>
#include <vector>

namespace riseml::launch {

// A rank called PMIx_Abort; the launcher stops the job with `status`.
struct AbortRequest {
  int rank = -1;
  int status = 1;
  std::string message;
};

class PmixHostServer {
 public:
  // Puts the server's sockets under `tmpdir`; throws std::runtime_error. One per process.
  explicit PmixHostServer(const std::string& tmpdir);
  PmixHostServer(const PmixHostServer&) = delete;
  PmixHostServer& operator=(const PmixHostServer&) = delete;
  // Does not finalize: PMIx_server_finalize can block forever (see teardown_watchdog.hpp), so
  // the launcher either calls finalize() under a watchdog or leaves PMIx running and _exits.
  ~PmixHostServer();

  // PMIx_server_finalize. May block forever.
  void finalize();

  // Abort requests that arrived (on PMIx's thread) since the last call; WakePipe::wake() is
  // called for each.
  std::vector<AbortRequest> take_abort_requests();
};

}  // namespace riseml::launch
