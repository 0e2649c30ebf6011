// What the exchange functions (exchange.hpp) and their waiter see of a communicator: a link to
// every peer, a name for every rank to put in errors, the deadline of the call in progress and
// how long a wait on shared memory spins. Context (core/) is one and fills it in at setup; the
// transports need nothing else of it, so the includes run core -> transport and never back.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "link.hpp"
#include "waits_for.hpp"

namespace riseml {

class PeerLinks {
 public:
  Link& link(int peer) const { return *links_[static_cast<std::size_t>(peer)]; }
  // Every link (null for this rank itself).
  const std::vector<std::unique_ptr<Link>>& links() const { return links_; }
  // "rank 3 (host node-2)"; "rank 3" while the hosts are not known.
  std::string name(int r) const;

  // Deadline of the call in progress, and the timeout it was set from (for messages).
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  // How long a wait on shared memory spins before it yields and sleeps.
  std::chrono::microseconds spin_time() const { return spin_time_; }
  // Whom this rank waits on, and who is really silent at a timeout (null: not set up).
  WaitsFor* waits_for() const { return waits_for_.get(); }

 protected:
  PeerLinks() = default;
  ~PeerLinks() = default;
  PeerLinks(const PeerLinks&) = delete;
  PeerLinks& operator=(const PeerLinks&) = delete;

  std::vector<std::unique_ptr<Link>> links_;
  std::vector<std::string> host_names_;  // per rank, for name()
  std::chrono::steady_clock::time_point deadline_{};
  std::chrono::milliseconds timeout_{};
  std::chrono::microseconds spin_time_{};
  std::unique_ptr<WaitsFor> waits_for_;
};

}  // namespace riseml
