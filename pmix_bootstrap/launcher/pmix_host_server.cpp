#include "pmix_host_server.hpp"

#include <pmix_server.h>
#include <signal.h>

#include <cstdio>
#include <exception>
#include <initializer_list>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "pmix_info_list.hpp"
#include "pmix_status_text.hpp"
#include "wake_pipe.hpp"

namespace riseml::launch {

namespace {

std::mutex abort_mutex;
std::vector<AbortRequest> pending_aborts;
bool server_exists = false;

// PMIx completes a fence whose ranks all live on this server by itself and calls this only for
// fences spanning several servers, which riseml-launch never has, or once it lost count of the
// local processes (a client left without PMIx_Finalize: see lost_client_recount.hpp). All
// participants are ours, and the data PMIx hands us is what it collected: give it straight
// back. PMIx owns `data` (it must not be freed here) and its callback
// thread-shifts, so calling it from within this upcall is allowed and does not block.
pmix_status_t fence_nb(const pmix_proc_t[], size_t, const pmix_info_t[], size_t, char* data,
                       size_t ndata, pmix_modex_cbfunc_t cbfunc, void* cbdata) {
  if (cbfunc != nullptr) cbfunc(PMIX_SUCCESS, data, ndata, cbdata, nullptr, nullptr);
  return PMIX_SUCCESS;
}

// Runs on PMIx's thread: record the request and let the supervisor act on it.
pmix_status_t abort_job(const pmix_proc_t* proc, void*, int status, const char message[],
                        pmix_proc_t[], size_t, pmix_op_cbfunc_t cbfunc, void* cbdata) {
  try {  // nothing may leave into PMIx's C thread
    std::lock_guard lock(abort_mutex);
    pending_aborts.push_back(
        {static_cast<int>(proc->rank), status, message != nullptr ? message : ""});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "riseml-launch: the abort of rank %u could not be recorded: %s\n",
                 static_cast<unsigned>(proc->rank), e.what());
  }
  WakePipe::wake();
  if (cbfunc != nullptr) cbfunc(PMIX_SUCCESS, cbdata);
  return PMIX_SUCCESS;
}

}  // namespace

PmixHostServer::PmixHostServer(const std::string& tmpdir) {
  if (server_exists) throw std::logic_error("only one PMIx server per process");
  static pmix_server_module_t module{};  // outlives the server, whatever PMIx keeps of it
  module.fence_nb = fence_nb;
  module.abort = abort_job;
  pmix::InfoArray settings = pmix::InfoList()
                                 .add_string(PMIX_SERVER_TMPDIR, tmpdir)
                                 .add_string(PMIX_SYSTEM_TMPDIR, tmpdir)
                                 .add_bool(PMIX_SERVER_TOOL_SUPPORT, false)
                                 .add_bool(PMIX_SERVER_SYSTEM_SUPPORT, false)
                                 .finish();
  // PMIx's threads inherit this mask: the launcher's signals then reach only the main thread.
  sigset_t launcher_signals, original_mask;
  sigemptyset(&launcher_signals);
  for (int signal_number : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) {
    sigaddset(&launcher_signals, signal_number);
  }
  pthread_sigmask(SIG_BLOCK, &launcher_signals, &original_mask);
  pmix_status_t status = PMIx_server_init(&module, settings.data(), settings.size());
  pthread_sigmask(SIG_SETMASK, &original_mask, nullptr);
  if (status != PMIX_SUCCESS) {
    throw std::runtime_error("PMIx_server_init failed: " + pmix::describe_status(status));
  }
  server_exists = true;
}

PmixHostServer::~PmixHostServer() {
  server_exists = false;
}

void PmixHostServer::finalize() {
  PMIx_server_finalize();
}

std::vector<AbortRequest> PmixHostServer::take_abort_requests() {
  std::lock_guard lock(abort_mutex);
  return std::exchange(pending_aborts, {});
}

}  // namespace riseml::launch
