// Bounds the launcher's last PMIx calls in time. PMIx_server_deregister_nspace and
// PMIx_server_finalize can block forever: once libpmix 4.2.2 has refused a connection from
// another user's process that claimed to be one of the job's ranks, its progress thread
// deadlocks (on a lock in freed memory, most likely: the refusal releases that rank's record
// once too often) the next time it touches that rank, and these calls wait for that thread.
// The launcher must end anyway, so a thread watches the teardown: when the limit passes before
// the teardown is over, it says which call did not return, removes the private tmpdir (whose
// destructor will not run) and _exits with the status the launcher was about to exit with. The
// ranks have all been reaped by then, so nothing else is left behind.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace riseml::launch {

class TeardownWatchdog {
 public:
  // Starts watching; throws std::system_error when the thread cannot start.
  TeardownWatchdog(std::chrono::milliseconds limit, int exit_code, std::string tmpdir);
  TeardownWatchdog(const TeardownWatchdog&) = delete;
  TeardownWatchdog& operator=(const TeardownWatchdog&) = delete;
  // The teardown is over in time: the watching ends.
  ~TeardownWatchdog();

  // The call about to be made and what is known of why it may hang, for the message.
  void entering(std::string call, std::string why_it_may_hang);

 private:
  void watch();

  const std::chrono::milliseconds limit_;
  const std::chrono::steady_clock::time_point deadline_;
  const int exit_code_;
  const std::string tmpdir_;
  std::mutex mutex_;
  std::condition_variable over_changed_;
  bool over_ = false;
  std::string call_ = "the teardown";
  std::string why_;
  std::thread thread_;  // last: starts once everything it reads is set
};

}  // namespace riseml::launch
