// Who is really silent. When a call times out, the peer this rank waits on may itself be
// waiting, healthy, on another rank (a local rank waiting in the cross-host step on a stopped
// rank of another host). Blaming the first peer would name a healthy rank, and an elastic
// driver would drop the wrong host. So before giving up, a rank follows the waits:
//
// - every rank, while it waits, says on whom (every few ms): in its shared-memory segment for
//   the ranks of its host, and in answer to a query on a small UDP socket for the others;
// - at the deadline it asks the peer it waits on, then that peer's peer, and so on, until a
//   rank does not answer (stopped, hung, busy outside the collective), or a whole host does not
//   (unreachable), or a rank says it waits on nobody;
// - the first rank to decide tells every rank (UDP, and the culprit travels with each link's
//   abort), and a waiting rank takes that verdict, so all survivors name the same rank.
//
// Datagrams carry an HMAC of the job secret; anything else on the port is dropped unread. A
// query is answered only from inside a wait (a rank in its own code says nothing, which is
// the answer: it is the one the others wait for).
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "call_tag.hpp"

namespace riseml {

class PeerLinks;
struct ShmSegmentHeader;

struct Verdict {
  int culprit = -1;
  std::string message;  // names the culprit first, then why
};

class WaitsFor {
 public:
  // `host_of`: a host index per rank (ranks of one host share it).
  WaitsFor(int rank, std::vector<int> host_of, std::vector<std::byte> secret);
  ~WaitsFor();
  WaitsFor(const WaitsFor&) = delete;
  WaitsFor& operator=(const WaitsFor&) = delete;

  // This rank's shared-memory segment, where it says whom it waits on for its host's ranks.
  void set_own_record(ShmSegmentHeader* header) { record_ = header; }
  // Opens the UDP socket on `ip` (where this rank's TCP listens); returns "ip:port".
  std::string open_udp(const std::string& ip);
  // Where rank `r` (of another host, or reached by TCP) answers; ignored when malformed.
  void set_udp_address(int r, const std::string& address);

  // Called every few ms while this rank waits on `peer`: says so, answers queries, and returns
  // a verdict another rank announced (the caller fails with it).
  std::optional<Verdict> while_waiting(int peer);
  // At the deadline, waiting on `peer` in `call` (describe(tag)), `direction` ("receiving from
  // it"): follows the waits and returns whom to blame.
  Verdict resolve(int peer, const PeerLinks& links, const std::string& call,
                  const std::string& direction);
  // A verdict another rank announced, if one arrived (reads what is there, never waits).
  std::optional<Verdict> verdict_now();
  // Tells every rank reached by UDP (best effort, never blocks).
  void announce(const Verdict& v) noexcept;

 private:
  struct Message;
  void say_waiting(int peer);
  void send(int to, const Message& m) noexcept;
  // Reads what arrived (bounded); answers queries as waiting on `waiting_on`. Stores answers
  // to this rank's queries in answers_ and a verdict in verdict_.
  void drain(int waiting_on);
  // Asks ranks `asked` whom they wait on; waits up to `patience` for the first answer of each.
  void ask(const std::vector<int>& asked, int waiting_on, std::chrono::milliseconds patience);

  int rank_;
  std::vector<int> host_of_;
  std::vector<std::byte> secret_;
  ShmSegmentHeader* record_ = nullptr;
  int fd_ = -1;
  std::vector<std::optional<sockaddr_in>> addresses_;
  std::uint64_t nonce_ = 0;
  std::vector<std::optional<int>> answers_;  // per rank: whom it said it waits on (-1: nobody)
  std::optional<Verdict> verdict_;
};

}  // namespace riseml
