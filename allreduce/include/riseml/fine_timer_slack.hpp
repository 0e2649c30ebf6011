// Linux ends a normal thread's timed sleep up to its "timer slack" late (50 us by default) so it
// can batch wake-ups. A thread that sleeps until a deadline which matters (the engine until its
// next cycle is due: Communicator::wait_for_peers) lowers its slack for as long as it sleeps.
#pragma once

namespace riseml {

// For its lifetime, the calling thread's timer slack is at most 1 us; the thread's own setting
// comes back afterwards (a caller's thread that runs the engine's cycles). Costs three prctl()
// calls, one where the slack is already low, none on a thread lowered for good.
class FineTimerSlack {
 public:
  FineTimerSlack();
  ~FineTimerSlack();
  FineTimerSlack(const FineTimerSlack&) = delete;
  FineTimerSlack& operator=(const FineTimerSlack&) = delete;

 private:
  long previous_ = -1;  // the slack to restore, -1: left as it was
};

// The calling thread's timer slack set to 1 us for the rest of its life (the engine's own thread,
// which sleeps mostly until its next cycle is due).
void lower_timer_slack_for_good();

}  // namespace riseml
