#include <riseml/fine_timer_slack.hpp>

#include <sys/prctl.h>

namespace riseml {

namespace {
constexpr unsigned long kFineSlackNs = 1000;
thread_local bool lowered_for_good = false;  // no system call at all on such a thread
}  // namespace

FineTimerSlack::FineTimerSlack() {
  if (lowered_for_good) return;
  const int current = ::prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  if (current > static_cast<int>(kFineSlackNs) && ::prctl(PR_SET_TIMERSLACK, kFineSlackNs, 0, 0, 0) == 0)
    previous_ = current;
}

FineTimerSlack::~FineTimerSlack() {
  if (previous_ > 0) ::prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(previous_), 0, 0, 0);
}

void lower_timer_slack_for_good() {
  lowered_for_good = ::prctl(PR_SET_TIMERSLACK, kFineSlackNs, 0, 0, 0) == 0;
}

}  // namespace riseml
