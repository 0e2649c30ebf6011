// Which failed rank to blame when several fail close together. One rank's death usually makes
// its peers fail (their PMIx calls and sockets see it gone, and they exit non-zero), and the
// order in which the launcher reaps them says little: a process killed by a signal closes its
// sockets before it becomes reapable, and a big one (GPU memory, a large heap) can take a while
// in between, so a peer's error exit is often seen first. A rank killed by a signal - a crash,
// the OOM killer, an administrator - is therefore blamed before ranks that exited non-zero, and
// among those of the same kind the one observed first.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <vector>

namespace riseml::launch {

// How long after the job's first failure later ones still compete to be its cause: the
// launcher names the cause and stops the job at the end of this window (or as soon as the
// cause cannot change any more).
inline constexpr std::chrono::milliseconds kBlameWindow{1000};

struct RankFailure {
  int rank = -1;
  pid_t pid = -1;
  int wait_status = 0;
  std::chrono::steady_clock::time_point observed;  // when waitpid returned it
};

// A death by a signal other than SIGPIPE: SIGPIPE is what a rank gets for writing to a peer that
// is already gone, so it is a consequence, not a cause.
bool is_likely_cause(int wait_status);

// `failures` in the order to report them: the cause first (the earliest likely cause, else the
// earliest failure), then the others in the order they were observed.
std::vector<RankFailure> blame_order(std::vector<RankFailure> failures);

// Whether the cause of `failures` (in the order observed, not empty) is settled at `now`: the
// window of the first one has passed, one of them is a likely cause (nothing observed later can
// outrank it), or no rank is left that could still fail.
bool cause_is_settled(const std::vector<RankFailure>& failures,
                      std::chrono::steady_clock::time_point now, bool ranks_still_running);

}  // namespace riseml::launch
