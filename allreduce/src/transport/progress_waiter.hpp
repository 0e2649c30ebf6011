// How a rank waits while its pending sends and receives cannot move:
//  - on the links' file descriptors when every pending side has one (TCP);
//  - on its doorbell when every pending side is shared memory: a short spin (the peer is
//    usually about to move), then a futex sleep that the peer's next move ends (doorbell.hpp);
//  - otherwise (a mix) by spinning briefly, then yielding, then sleeping in short steps.
// Every few milliseconds it checks the peers for death and pending messages for mismatches,
// and it enforces the call's deadline, so no wait lasts forever.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "link.hpp"
#include "peer_links.hpp"

#include <riseml/wait_stats.hpp>

namespace riseml {

struct Doorbell;

class ProgressWaiter {
 public:
  ProgressWaiter(PeerLinks& peers, const CallTag& tag) : peers_(peers), tag_(tag) {}
  ~ProgressWaiter();

  void moved();
  // Waits a little. `sender`/`receiver`: the links with pending work (or null), and their peers.
  void idle(Link* sender, int send_peer, Link* receiver, int recv_peer);

 private:
  void check(Link* sender, int send_peer, Link* receiver, int recv_peer);
  void wait_on_doorbell(Doorbell& bell);

  PeerLinks& peers_;
  const CallTag& tag_;
  unsigned idle_ = 0;
  std::chrono::steady_clock::time_point next_check_ =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  std::chrono::steady_clock::time_point spin_until_{}, yield_until_{};
  Doorbell* armed_ = nullptr;  // announced as a sleeper on it, looking for work once more
  std::uint32_t armed_at_ = 0;
};

}  // namespace riseml
