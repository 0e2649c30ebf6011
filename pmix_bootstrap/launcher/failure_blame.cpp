#include "failure_blame.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>

namespace riseml::launch {

bool is_likely_cause(int wait_status) {
  return WIFSIGNALED(wait_status) && WTERMSIG(wait_status) != SIGPIPE;
}

std::vector<RankFailure> blame_order(std::vector<RankFailure> failures) {
  std::stable_sort(
      failures.begin(), failures.end(),
      [](const RankFailure& a, const RankFailure& b) { return a.observed < b.observed; });
  auto cause = std::find_if(failures.begin(), failures.end(), [](const RankFailure& failure) {
    return is_likely_cause(failure.wait_status);
  });
  if (cause != failures.end()) std::rotate(failures.begin(), cause, cause + 1);
  return failures;
}

bool cause_is_settled(const std::vector<RankFailure>& failures,
                      std::chrono::steady_clock::time_point now, bool ranks_still_running) {
  if (!ranks_still_running || now >= failures.front().observed + kBlameWindow) return true;
  return std::any_of(failures.begin(), failures.end(), [](const RankFailure& failure) {
    return is_likely_cause(failure.wait_status);
  });
}

}  // namespace riseml::launch
