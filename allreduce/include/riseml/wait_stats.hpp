// Where this process's ranks spent their waiting inside collectives (riseml-bench --wait-stats):
// counts of each kind of wait and the nanoseconds slept, summed since the process started.
#pragma once

#include <cstdint>

namespace riseml {

struct WaitStats {
  std::uint64_t yields = 0, timed_sleeps = 0, doorbell_sleeps = 0, polls = 0;
  std::uint64_t slept_ns = 0;
};
WaitStats wait_stats();

}  // namespace riseml
