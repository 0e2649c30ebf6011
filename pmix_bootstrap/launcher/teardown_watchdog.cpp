#include "teardown_watchdog.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>
#include <utility>

namespace riseml::launch {

TeardownWatchdog::TeardownWatchdog(std::chrono::milliseconds limit, int exit_code,
                                   std::string tmpdir)
    : limit_(limit),
      deadline_(std::chrono::steady_clock::now() + limit),
      exit_code_(exit_code),
      tmpdir_(std::move(tmpdir)),
      thread_([this] { watch(); }) {}

TeardownWatchdog::~TeardownWatchdog() {
  {
    std::lock_guard lock(mutex_);
    over_ = true;
  }
  over_changed_.notify_one();
  thread_.join();
}

void TeardownWatchdog::entering(std::string call, std::string why_it_may_hang) {
  std::lock_guard lock(mutex_);
  call_ = std::move(call);
  why_ = std::move(why_it_may_hang);
}

void TeardownWatchdog::watch() {
  std::unique_lock lock(mutex_);
  if (over_changed_.wait_until(lock, deadline_, [this] { return over_; })) return;
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g s", static_cast<double>(limit_.count()) / 1000.0);
  std::string message = "riseml-launch: " + call_ + " did not return within " + limit +
                        (why_.empty() ? "" : " (" + why_ + ")") +
                        "; exiting with the ranks' status " + std::to_string(exit_code_) +
                        " (--finalize-timeout sets the limit)\n";
  // write(2), not stdio: the stuck thread might hold a stdio lock.
  [[maybe_unused]] ssize_t ignored = write(STDERR_FILENO, message.data(), message.size());
  std::error_code error;
  std::filesystem::remove_all(tmpdir_, error);
  // The main thread is stuck inside PMIx: neither it nor exit()'s handlers can run safely.
  _exit(exit_code_);
}

}  // namespace riseml::launch
