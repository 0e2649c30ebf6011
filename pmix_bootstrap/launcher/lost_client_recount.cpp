#include "lost_client_recount.hpp"

#include <pmix.h>  // PMIx_Register_event_handler
#include <pmix_server.h>
#include <sys/wait.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <riseml/common/small_file.hpp>

#include "pmix_info_list.hpp"
#include "pmix_status_text.hpp"

namespace riseml::launch {

namespace {

// PMIx's event handlers carry no user pointer. The handler holds the mutex while it uses the
// object, so the destructor need not call into PMIx (which can hang; see teardown_watchdog.hpp).
std::mutex active_mutex;
LostClientRecount* active = nullptr;

// The kernel's PF_EXITING: set on every thread when its exit begins, before its files (the
// PMIx socket among them) are closed, so a process whose exit closed the socket shows it.
constexpr unsigned long kExitingFlag = 0x4;

// Runs on PMIx's progress thread. Lost connections that came together arrive as one event:
// the first client as `source`, the others as PMIX_PROCID entries.
void on_lost_connection(std::size_t, pmix_status_t, const pmix_proc_t* source, pmix_info_t info[],
                        std::size_t ninfo, pmix_info_t[], std::size_t,
                        pmix_event_notification_cbfunc_fn_t cbfunc, void* cbdata) {
  std::unique_lock lock(active_mutex);
  // Nothing may leave this function into PMIx's C thread: a failure here costs the count, not
  // the launcher.
  try {
    if (LostClientRecount* recount = active) {
      std::vector<pmix_rank_t> ranks;
      auto note = [&](const pmix_proc_t& proc) {
        if (PMIX_CHECK_NSPACE(proc.nspace, recount->nspace().c_str()) && proc.rank < PMIX_RANK_VALID)
          ranks.push_back(proc.rank);
      };
      if (source != nullptr) note(*source);
      for (std::size_t i = 0; i < ninfo; ++i) {
        if (PMIX_CHECK_KEY(&info[i], PMIX_PROCID) && info[i].value.type == PMIX_PROC &&
            info[i].value.data.proc != nullptr)
          note(*info[i].value.data.proc);
      }
      for (pmix_rank_t rank : ranks) recount->lost(static_cast<int>(rank));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "riseml-launch: a lost PMIx connection was not counted: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "riseml-launch: a lost PMIx connection was not counted\n");
  }
  lock.unlock();
  if (cbfunc != nullptr) cbfunc(PMIX_SUCCESS, nullptr, 0, nullptr, nullptr, cbdata);
}

// The registration's outcome, shared with its callback, which may come after the wait ended.
struct Registration {
  std::mutex mutex;
  std::condition_variable done_changed;
  bool done = false;
  pmix_status_t status = PMIX_SUCCESS;
};

void on_registered(pmix_status_t status, std::size_t, void* cbdata) {
  auto* shared = static_cast<std::shared_ptr<Registration>*>(cbdata);
  {
    std::lock_guard lock((*shared)->mutex);
    (*shared)->status = status;
    (*shared)->done = true;
  }
  (*shared)->done_changed.notify_all();
  delete shared;
}

// With a callback, PMIx registers on its own thread (without one it would change its handler
// list on this thread, unlocked, while its thread may be using it).
pmix_status_t register_handler() {
  auto registration = std::make_shared<Registration>();
  auto* cbdata = new std::shared_ptr<Registration>(registration);
  pmix_status_t code = PMIX_ERR_LOST_CONNECTION;
  pmix_status_t status =
      PMIx_Register_event_handler(&code, 1, nullptr, 0, on_lost_connection, on_registered, cbdata);
  if (status != PMIX_SUCCESS) {
    delete cbdata;
    return status;
  }
  std::unique_lock lock(registration->mutex);
  if (!registration->done_changed.wait_for(lock, std::chrono::seconds(10),
                                           [&] { return registration->done; }))
    return PMIX_ERR_TIMEOUT;
  return registration->status;
}

// PMIx reads the directives until its callback: they live on the heap until then.
void release_directives(pmix_status_t, void* cbdata) {
  delete static_cast<pmix::InfoArray*>(cbdata);
}

}  // namespace

LostClientRecount::LostClientRecount(std::string nspace, int local_processes)
    : nspace_(std::move(nspace)), count_(local_processes), pids_(local_processes, 0) {
  {
    std::lock_guard lock(active_mutex);
    if (active != nullptr) throw std::logic_error("only one LostClientRecount at a time");
    active = this;
  }
  // Registered once for the server's life: the handler does nothing while no object is active.
  static bool registered = false;
  if (registered) return;
  pmix_status_t status = register_handler();
  if (status != PMIX_SUCCESS) {
    std::lock_guard lock(active_mutex);
    active = nullptr;
    throw std::runtime_error("PMIx_Register_event_handler(PMIX_ERR_LOST_CONNECTION) failed: " +
                             pmix::describe_status(status));
  }
  registered = true;
}

LostClientRecount::~LostClientRecount() {
  std::lock_guard lock(active_mutex);
  active = nullptr;
}

void LostClientRecount::set_process(int rank, pid_t pid) {
  std::lock_guard lock(mutex_);
  if (rank >= 0 && static_cast<std::size_t>(rank) < pids_.size()) pids_[rank] = pid;
}

void LostClientRecount::lost(int rank) {
  int count = 0;
  {
    std::lock_guard lock(mutex_);
    if (rank < 0 || static_cast<std::size_t>(rank) >= pids_.size()) return;
    pid_t pid = pids_[rank];
    count = count_after_loss(count_, pid > 0 && process_alive(pid));
  }
  restore_count(count);
}

int LostClientRecount::count_after_loss(int& count, bool process_alive) {
  // PMIx lowered its count by one (not below zero); a live process's count goes back.
  if (!process_alive && count > 0) --count;
  return count;
}

bool LostClientRecount::process_alive(pid_t pid) {
  siginfo_t ended{};
  // Not reaped (WNOWAIT): the launcher's supervisor does that.
  if (waitid(P_PID, static_cast<id_t>(pid), &ended, WEXITED | WNOHANG | WNOWAIT) != 0)
    return false;  // gone (reaped already) or not ours
  if (ended.si_pid != 0) return false;
  // Read without exceptions: a process exiting now makes the read fail (ESRCH).
  const std::optional<std::string> stat = read_small_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  // pid (comm) state ppid pgrp session tty_nr tpgid flags: the name may hold anything, so
  // read from its last ')'.
  std::size_t name_end = stat->rfind(')');
  if (name_end == std::string::npos) return false;
  std::istringstream fields(stat->substr(name_end + 1));
  std::string state;
  long ppid = 0, pgrp = 0, session = 0, tty = 0, tpgid = 0;
  unsigned long flags = 0;
  if (!(fields >> state >> ppid >> pgrp >> session >> tty >> tpgid >> flags)) return false;
  if (state == "Z" || state == "X") return false;
  return (flags & kExitingFlag) == 0;
}

void LostClientRecount::restore_count(int count) {
  pmix_nspace_t nspace;
  PMIX_LOAD_NSPACE(nspace, nspace_.c_str());
  // An update of the count alone: PMIX_REGISTER_NODATA leaves the job's data as it is.
  auto directives = std::make_unique<pmix::InfoArray>(
      pmix::InfoList().add_bool(PMIX_REGISTER_NODATA, true).finish());
  pmix_status_t status = PMIx_server_register_nspace(
      nspace, count, directives->data(), directives->size(), release_directives, directives.get());
  if (status == PMIX_SUCCESS) {
    directives.release();  // the callback frees it
  } else {
    std::fprintf(stderr,
                 "riseml-launch: cannot give PMIx back the count of %d local processes (%s); "
                 "fences of this job may not complete\n",
                 count, pmix::describe_status(status).c_str());
  }
}

}  // namespace riseml::launch
