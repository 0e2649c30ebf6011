// How a rank waits while its pending sends and receives cannot move: on the links' file
// descriptors when every pending side has one (TCP), else by spinning briefly, then yielding
// (ranks may outnumber cores), then sleeping in short steps. Every few milliseconds it checks
// the peers for death and pending messages for mismatches, and it enforces the call's
// deadline, so no wait lasts forever.
#pragma once

#include <chrono>

#include "../core/context.hpp"
#include "link.hpp"

namespace riseml {

class ProgressWaiter {
 public:
  ProgressWaiter(Context& context, const CallTag& tag) : context_(context), tag_(tag) {}

  void moved() { idle_ = 0; }
  // Waits a little. `sender`/`receiver`: the links with pending work (or null), and their peers.
  void idle(Link* sender, int send_peer, Link* receiver, int recv_peer);

 private:
  Context& context_;
  const CallTag& tag_;
  unsigned idle_ = 0;
  std::chrono::steady_clock::time_point next_check_ =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
};

}  // namespace riseml
