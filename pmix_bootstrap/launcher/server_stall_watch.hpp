// Notices when the embedded PMIx server stops serving its clients. libpmix 4.2.2 runs everything
// it does for clients on one progress thread, and that thread deadlocks once it has refused a
// connection from another user's process that claimed to be one of the job's ranks: from then
// on ranks that connect hang in PMIx_Init, fences never complete, and nothing would ever end
// the job. So a thread of the watch asks the server, again and again, to call back from that
// thread (a ServerPing), one request at a time; the supervisor asks stalled() on its own
// thread and stops the job when a request stays unanswered past the limit.
//
// The verdict is the supervisor's, not the pinging thread's, because sending a request may
// itself block on a lock the stuck thread holds. It is confirmed once more a little later, so a
// launcher that was itself stopped for a while (Ctrl-Z, a suspended machine) first lets the
// server answer the requests that waited meanwhile.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace riseml::launch {

// A request the server must answer from the thread that serves its clients.
class ServerPing {
 public:
  virtual ~ServerPing() = default;
  // Asks for `pong` to be called once from that thread. Returns false when the request could
  // not be made (`pong` is then never called); `why` says why. May block while the server is
  // stuck.
  virtual bool send(std::function<void()> pong, std::string& why) = 0;
};

struct StallWatchSettings {
  // A request unanswered this long (and still a moment later, see ServerStallWatch::stalled())
  // means the server is stuck.
  std::chrono::milliseconds limit = std::chrono::seconds(10);

  // Between an answer and the next request, and between suspecting and confirming a stall:
  // a second, or a quarter of the limit when that is shorter.
  std::chrono::milliseconds interval() const;
};

class ServerStallWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts pinging; throws std::system_error when the thread cannot start.
  ServerStallWatch(std::shared_ptr<ServerPing> ping, StallWatchSettings settings);
  ServerStallWatch(const ServerStallWatch&) = delete;
  ServerStallWatch& operator=(const ServerStallWatch&) = delete;
  // abandon(), unless stop() or abandon() ran: never blocks.
  ~ServerStallWatch();

  // Whether the server is stuck: a request went unanswered for the limit, and still is at a
  // later call at least interval() after the one that first saw that. Call it from one thread.
  bool stalled(Clock::time_point now);
  // When stalled() could next turn true, for a poll timeout.
  Clock::time_point next_check(Clock::time_point now) const;

  // Stops pinging and waits until the request in flight, if any, was answered, so that no
  // callback of it is left inside PMIx. Blocks for as long as the server is stuck: call it
  // only under a watchdog.
  void stop();
  // Stops pinging without waiting: the thread is left to itself (it may be blocked in a
  // request) and never sends another.
  void abandon();

  const StallWatchSettings& settings() const { return settings_; }

 private:
  struct State;

  const StallWatchSettings settings_;
  std::shared_ptr<State> state_;
  bool stopped_ = false;
  // Which request stalled() first saw unanswered past the limit, and when.
  std::uint64_t suspected_request_ = 0;
  Clock::time_point suspected_at_;
  std::thread thread_;  // last: starts once everything it reads is set
};

}  // namespace riseml::launch
