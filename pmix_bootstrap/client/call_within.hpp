// Bounds a blocking call that cannot be cancelled (PMIx_Init) in time: it runs on a thread of
// its own while the caller waits up to a limit for its result. A call still running at the
// limit is left running, detached, with everything it touches owned by the thread (the task
// and its shared result) - never by the caller, who has given up and gone on. That costs a
// thread blocked for good, acceptable where giving up means the process is about to fail.
#pragma once

#include <chrono>
#include <future>
#include <optional>
#include <thread>
#include <utility>

namespace riseml::pmix {

// The result of `call()`, or nullopt when it did not return within `limit`. Rethrows what
// `call` threw; throws std::system_error when no thread can be started.
template <typename Call>
auto call_within(std::chrono::milliseconds limit, Call call) -> std::optional<decltype(call())> {
  using Result = decltype(call());
  std::packaged_task<Result()> task(std::move(call));
  std::future<Result> result = task.get_future();
  std::thread(std::move(task)).detach();
  if (result.wait_for(limit) != std::future_status::ready) return std::nullopt;
  return result.get();
}

}  // namespace riseml::pmix
