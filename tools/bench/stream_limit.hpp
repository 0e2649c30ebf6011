// The link limit of an allreduce over TCP, measured. Across hosts: one rank per host streams to
// the next host and from the previous one at once, over one plain TCP connection each way (no
// framing, no reduction, one cache-resident buffer sent over and over as iperf3 does), the
// bytes that must cross each host's link in any allreduce of S bytes, S * 2(h-1)/h for h hosts.
// On one host: every rank streams to the next, S * 2(n-1)/n (a ring over loopback). Its busbw
// is what no allreduce over these links can beat; on a shaped testbed, the link rate less TCP's
// overhead (and more than the link rate where hosts hold several ranks, since only the part
// that crosses hosts counts). The sockets listen where our TCP transport does (RISEML_IFACE,
// else the first interface that is up).
#pragma once

#include <riseml/communicator.hpp>

#include <cstddef>
#include <vector>

#include <riseml/tcp_socket.hpp>

namespace riseml::bench {

// Collective: true on every rank when some rank has a TCP link (the links may be the limit).
bool links_use_tcp(Communicator& comm);

class StreamLimit {
 public:
  // Collective: every rank connects to the next and accepts the previous. Throws
  // std::runtime_error naming the peer when a connection cannot be made.
  explicit StreamLimit(Communicator& comm);
  // Seconds per allreduce-worth of link traffic for an allreduce of `bytes`, slowest rank,
  // back to back.
  double seconds(Communicator& comm, std::size_t bytes, int iterations);
  // The bytes each streaming rank sends for an allreduce of `bytes`.
  std::size_t stream_bytes(std::size_t bytes) const;
  int hosts() const { return hosts_; }
  // Who streams to whom, for the report.
  std::string describe() const;

 private:
  void stream(std::size_t bytes);

  int hosts_ = 1, streamers_ = 1;
  bool streaming_ = false;
  Fd to_next_, from_prev_;
  std::vector<std::byte> out_, in_;
  std::string next_address_;
};

}  // namespace riseml::bench
