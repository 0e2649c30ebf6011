#include "progress_waiter.hpp"

#include <poll.h>
#include <sched.h>
#include <time.h>

#include <riseml/collective_error.hpp>

#include "doorbell.hpp"

namespace riseml {

namespace {

using Clock = std::chrono::steady_clock;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

struct Counters {
  std::atomic<std::uint64_t> yields{0}, timed_sleeps{0}, doorbell_sleeps{0}, polls{0},
      slept_ns{0};
};
Counters counters;

void count(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }

// A futex sleep is at most this long, so the periodic checks (a dead peer, the deadline) run.
constexpr auto kLongestSleep = std::chrono::milliseconds(5);
// After the spin, how long a rank yields before it sleeps on its doorbell.
constexpr auto kYieldTime = std::chrono::milliseconds(1);

}  // namespace

WaitStats wait_stats() {
  WaitStats s;
  s.yields = counters.yields.load();
  s.timed_sleeps = counters.timed_sleeps.load();
  s.doorbell_sleeps = counters.doorbell_sleeps.load();
  s.polls = counters.polls.load();
  s.slept_ns = counters.slept_ns.load();
  return s;
}

ProgressWaiter::~ProgressWaiter() {
  if (armed_) armed_->disarm();
}

void ProgressWaiter::moved() {
  idle_ = 0;
  if (armed_) {
    armed_->disarm();
    armed_ = nullptr;
  }
}

void ProgressWaiter::check(Link* sender, int send_peer, Link* receiver, int recv_peer) {
  const auto now = Clock::now();
  if (now >= next_check_) {
    if (sender) sender->check_peer();
    if (receiver) receiver->check_peer();
    for (const auto& l : peers_.links())
      if (l) l->check_pending(tag_);
    next_check_ = now + std::chrono::milliseconds(20);
    // Say whom this rank waits on; take a verdict another rank reached.
    if (WaitsFor* w = peers_.waits_for())
      if (auto verdict = w->while_waiting(receiver ? recv_peer : send_peer))
        throw CollectiveError(ErrorKind::peer_failed, verdict->message, verdict->culprit);
  }
  if (now >= peers_.deadline()) {
    const int silent = receiver ? recv_peer : send_peer;
    if (WaitsFor* w = peers_.waits_for()) {
      // The peer this rank waits on may be waiting, healthy, on another: blame the one that
      // is really silent.
      const Verdict v = w->resolve(silent, peers_, describe(tag_),
                                   receiver ? "receiving from it" : "sending to it");
      throw CollectiveError(ErrorKind::timeout, v.message, v.culprit);
    }
    throw CollectiveError(ErrorKind::timeout,
                          peers_.name(silent) + " did not answer within " +
                              std::to_string(peers_.timeout().count()) + " ms (" +
                              describe(tag_) + ", " +
                              (receiver ? "receiving from it" : "sending to it") + ")",
                          silent);
  }
}

void ProgressWaiter::wait_on_doorbell(Doorbell& bell) {
  if (idle_ == 1) {
    const auto now = Clock::now();
    spin_until_ = now + peers_.spin_time();
    yield_until_ = now + kYieldTime;
  }
  if (!armed_) {
    // Spin while the peer is likely about to move (checking the clock now and then), then
    // yield for a while: a peer that was only preempted gets the CPU back the soonest while
    // this rank stays runnable.
    // With no spin (more ranks than CPUs) every idle turn yields at once.
    const bool spin = peers_.spin_time().count() != 0;
    const bool clock = !spin || (idle_ & 15u) == 0;
    if (!clock || (spin && Clock::now() < spin_until_)) {
      cpu_relax();
      return;
    }
    if (Clock::now() < yield_until_) {
      sched_yield();
      count(counters.yields);
      return;
    }
    // Announce the sleep, then let the caller look for work once more before sleeping.
    armed_at_ = bell.arm();
    armed_ = &bell;
    return;
  }
  const auto start = Clock::now();
  const auto limit = std::min<Clock::duration>(kLongestSleep, std::max(next_check_, start) - start);
  armed_ = nullptr;
  bell.sleep(armed_at_, std::chrono::duration_cast<std::chrono::microseconds>(limit) +
                            std::chrono::microseconds(1));
  count(counters.doorbell_sleeps);
  count(counters.slept_ns, static_cast<std::uint64_t>(
                               std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count()));
  idle_ = 1;  // a wake-up starts a new short spin, then sleeps again without yielding
  spin_until_ = Clock::now() + peers_.spin_time();
  yield_until_ = spin_until_;
}

void ProgressWaiter::idle(Link* sender, int send_peer, Link* receiver, int recv_peer) {
  ++idle_;
  pollfd fds[2];
  nfds_t nfds = 0;
  bool all_fds = true;
  Doorbell* bell = nullptr;
  bool all_bell = true;
  auto add = [&](Link* l, bool sending) {
    if (l == nullptr) return;
    short events = 0;
    const int fd = l->wait_fd(sending, &events);
    if (fd == Link::kNothingToWaitFor) return;
    Doorbell* d = l->doorbell();
    if (d == nullptr || (bell != nullptr && bell != d)) all_bell = false;
    bell = d;
    if (fd < 0)
      all_fds = false;
    else
      fds[nfds++] = {fd, events, 0};
  };
  add(sender, true);
  add(receiver, false);
  const bool on_doorbell = all_bell && bell != nullptr;

  if ((idle_ & 63u) == 0 || all_fds || (on_doorbell && armed_)) check(sender, send_peer, receiver, recv_peer);

  if (all_fds && nfds > 0) {
    if (idle_ > 16) {
      count(counters.polls);
      ::poll(fds, nfds, 10);
    }
  } else if (on_doorbell) {
    wait_on_doorbell(*bell);
  } else if (idle_ < 256) {
    cpu_relax();
  } else if (idle_ < 2048) {
    sched_yield();
    count(counters.yields);
  } else {
    timespec ts{0, idle_ < 8192 ? 20'000 : 200'000};
    const auto start = Clock::now();
    nanosleep(&ts, nullptr);
    count(counters.timed_sleeps);
    count(counters.slept_ns, static_cast<std::uint64_t>(
                                 std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count()));
  }
}

}  // namespace riseml
