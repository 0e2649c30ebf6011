#include "progress_waiter.hpp"

#include <poll.h>
#include <sched.h>
#include <time.h>

#include <riseml/collective_error.hpp>

namespace riseml {

namespace {
void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
}  // namespace

void ProgressWaiter::idle(Link* sender, int send_peer, Link* receiver, int recv_peer) {
  using Clock = std::chrono::steady_clock;
  ++idle_;
  pollfd fds[2];
  nfds_t nfds = 0;
  bool all_fds = true;
  auto add = [&](Link* l, bool sending) {
    if (l == nullptr) return;
    short events = 0;
    const int fd = l->wait_fd(sending, &events);
    if (fd == Link::kNothingToWaitFor) return;
    if (fd < 0)
      all_fds = false;
    else
      fds[nfds++] = {fd, events, 0};
  };
  add(sender, true);
  add(receiver, false);

  if ((idle_ & 63u) == 0 || all_fds) {
    const auto now = Clock::now();
    if (now >= next_check_) {
      if (sender) sender->check_peer();
      if (receiver) receiver->check_peer();
      for (const auto& l : context_.links())
        if (l) l->check_pending(tag_);
      next_check_ = now + std::chrono::milliseconds(20);
    }
    if (now >= context_.deadline()) {
      const int silent = receiver ? recv_peer : send_peer;
      throw CollectiveError(ErrorKind::timeout,
                            context_.name(silent) + " did not answer within " +
                                std::to_string(context_.options().timeout.count()) + " ms (" +
                                describe(tag_) + ", " +
                                (receiver ? "receiving from it" : "sending to it") + ")",
                            silent);
    }
  }

  if (all_fds && nfds > 0) {
    if (idle_ > 16) ::poll(fds, nfds, 10);
  } else if (idle_ < 256) {
    cpu_relax();
  } else if (idle_ < 2048) {
    sched_yield();
  } else {
    timespec ts{0, idle_ < 8192 ? 20'000 : 200'000};
    nanosleep(&ts, nullptr);
  }
}

}  // namespace riseml
