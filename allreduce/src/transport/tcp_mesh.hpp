// Sets up the TCP links of one rank: listens, publishes its address, connects to the TCP peers
// of lower rank and accepts those of higher rank. Every connection proves, both ways, that its
// end knows the job secret (HMAC-SHA256 challenge-response); one that cannot is refused,
// logged, and never carries data.
#pragma once

#include <riseml/communicator.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "link.hpp"
#include <riseml/tcp_socket.hpp>

namespace riseml {

class TcpMesh {
 public:
  TcpMesh(const CommunicatorOptions& options, int rank, std::vector<std::byte> secret);
  ~TcpMesh();

  // "a.b.c.d:port" to publish.
  std::string address() const;

  // Links indexed by rank (null for ranks not in `peers`).
  std::vector<std::unique_ptr<Link>> connect(const std::vector<int>& peers,
                                             const std::vector<std::string>& addresses,
                                             const std::vector<std::string>& names,
                                             std::chrono::steady_clock::time_point deadline);

 private:
  void accept_peers(const std::vector<int>& peers, const std::vector<std::string>& names,
                    std::size_t expected, std::vector<std::vector<Fd>>& conns,
                    std::chrono::steady_clock::time_point deadline);

  CommunicatorOptions options_;
  int rank_;
  std::vector<std::byte> secret_;
  int listen_fd_ = -1;
  std::string address_;
};

}  // namespace riseml
