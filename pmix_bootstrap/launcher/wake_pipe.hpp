// Turns asynchronous events - signals, and callbacks on the PMIx server's thread - into a
// readable byte on one pipe that the supervisor polls, so all decisions are made on one thread.
#pragma once

namespace riseml::launch {

class WakePipe {
 public:
  // Creates the pipe and installs handlers for SIGCHLD, SIGINT, SIGTERM, SIGHUP; ignores SIGPIPE
  // (a closed stdout must not kill the launcher while ranks still run). Call once, early.
  static void install();

  static int read_fd();
  // Async-signal-safe and thread-safe.
  static void wake();
  // Empties the pipe; call before looking at what happened.
  static void drain();

  // How many SIGINT/SIGTERM/SIGHUP arrived so far, and the last of them.
  static int stop_signal_count();
  static int last_stop_signal();

  // For a forked child before exec: default dispositions for the signals above.
  static void restore_default_signals();
};

}  // namespace riseml::launch
