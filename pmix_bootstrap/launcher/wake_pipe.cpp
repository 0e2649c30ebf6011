#include "wake_pipe.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace riseml::launch {

namespace {

int pipe_fds[2] = {-1, -1};
volatile sig_atomic_t stop_signals = 0;
volatile sig_atomic_t last_stop = 0;

constexpr int kHandledSignals[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP};

void on_signal(int signal_number) {
  int saved_errno = errno;
  if (signal_number != SIGCHLD) {
    last_stop = signal_number;
    stop_signals = stop_signals + 1;
  }
  WakePipe::wake();
  errno = saved_errno;
}

}  // namespace

void WakePipe::install() {
  if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe2");
  }
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal_number : kHandledSignals) sigaction(signal_number, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int WakePipe::read_fd() {
  return pipe_fds[0];
}

void WakePipe::wake() {
  const char byte = 1;
  // A full pipe already guarantees a wake-up; the lost byte does not matter.
  [[maybe_unused]] ssize_t ignored = write(pipe_fds[1], &byte, 1);
}

void WakePipe::drain() {
  char buffer[256];
  while (read(pipe_fds[0], buffer, sizeof buffer) > 0) {
  }
}

int WakePipe::stop_signal_count() {
  return stop_signals;
}

int WakePipe::last_stop_signal() {
  return last_stop;
}

void WakePipe::restore_default_signals() {
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  for (int signal_number : kHandledSignals) sigaction(signal_number, &action, nullptr);
  sigaction(SIGPIPE, &action, nullptr);
}

}  // namespace riseml::launch
