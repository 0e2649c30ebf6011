#include "stream_limit.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "measure.hpp"

namespace riseml::bench {

namespace {

constexpr std::size_t kAddressBytes = 64;
// As iperf3 does: one buffer sent over and over, received into one buffer, both small enough
// to stay in cache, so the number is the link's (and the kernel's), not this machine's memory's.
constexpr std::size_t kBufferBytes = 256 << 10;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("stream limit: " + what + ": " + std::strerror(errno));
}

}  // namespace

bool links_use_tcp(Communicator& comm) {
  std::int64_t tcp = comm.describe_transports().find("tcp") != std::string::npos;
  comm.allreduce(&tcp, &tcp, 1, DataType::int64, ReduceOp::max);
  return tcp != 0;
}

StreamLimit::StreamLimit(Communicator& comm) {
  const int n = comm.size();
  out_.assign(kBufferBytes, std::byte{1});
  in_.assign(kBufferBytes, std::byte{0});
  if (n < 2) return;

  // Who streams: the first rank of every host when there are several hosts, else every rank.
  const HostLayout layout = comm.host_layout();
  std::vector<std::uint8_t> first(static_cast<std::size_t>(n));
  const std::uint8_t mine_first = layout.local_ranks.empty() || layout.local_ranks.front() == comm.rank();
  comm.allgather(&mine_first, first.data(), 1, DataType::uint8);
  std::vector<int> ring;
  for (int r = 0; r < n; ++r)
    if (first[static_cast<std::size_t>(r)]) ring.push_back(r);
  hosts_ = static_cast<int>(ring.size());
  if (hosts_ == 1) {
    ring.clear();
    for (int r = 0; r < n; ++r) ring.push_back(r);
  }
  streamers_ = static_cast<int>(ring.size());
  const auto me = std::find(ring.begin(), ring.end(), comm.rank());
  streaming_ = me != ring.end();

  const std::string ip = listen_address(CommunicatorOptions::from_environment().iface);
  Fd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener) fail("socket");
  sockaddr_in a = parse_address(ip + ":0");
  socklen_t len = sizeof a;
  if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener.get(), 4) != 0 ||
      ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0)
    fail("listen on " + ip);
  char mine[kAddressBytes] = {};
  std::snprintf(mine, sizeof mine, "%s:%u", ip.c_str(), static_cast<unsigned>(ntohs(a.sin_port)));
  std::vector<char> all(kAddressBytes * static_cast<std::size_t>(n));
  comm.allgather(mine, all.data(), kAddressBytes, DataType::uint8);

  if (streaming_) {
    const int next = ring[static_cast<std::size_t>((me - ring.begin() + 1) % streamers_)];
    next_address_ = std::string(all.data() + kAddressBytes * static_cast<std::size_t>(next));
    // Connect first (the listen backlog holds it), then accept: no rank waits on another's accept.
    to_next_ = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const sockaddr_in to = parse_address(next_address_);
    if (!to_next_ || ::connect(to_next_.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0)
      fail("connect to rank " + std::to_string(next) + " at " + next_address_);
    pollfd p{listener.get(), POLLIN, 0};
    if (::poll(&p, 1, 30000) != 1)
      throw std::runtime_error("stream limit: the previous rank did not connect in 30 s");
    from_prev_ = Fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!from_prev_) fail("accept");
    // The same socket settings as our transport: no Nagle, 4 MiB buffers, non-blocking.
    tune_socket(to_next_.get());
    tune_socket(from_prev_.get());
  }
  comm.barrier();
}

std::size_t StreamLimit::stream_bytes(std::size_t bytes) const {
  const auto k = static_cast<std::size_t>(streamers_);
  return k < 2 ? 0 : bytes / k * 2 * (k - 1);
}

std::string StreamLimit::describe() const {
  return hosts_ > 1 ? "one rank per host, " + std::to_string(hosts_) + " hosts in a ring, S*2(h-1)/h bytes each"
                    : "every rank in a ring on this host, S*2(n-1)/n bytes each";
}

void StreamLimit::stream(std::size_t bytes) {
  std::size_t sent = 0, got = 0;
  while (sent < bytes || got < bytes) {
    pollfd p[2] = {{to_next_.get(), static_cast<short>(sent < bytes ? POLLOUT : 0), 0},
                   {from_prev_.get(), static_cast<short>(got < bytes ? POLLIN : 0), 0}};
    if (::poll(p, 2, 30000) <= 0) throw std::runtime_error("stream limit: no progress for 30 s");
    if (sent < bytes && (p[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t w = ::send(to_next_.get(), out_.data() + sent % kBufferBytes,
                               std::min(bytes - sent, kBufferBytes - sent % kBufferBytes), MSG_NOSIGNAL);
      if (w < 0 && errno != EAGAIN && errno != EINTR) fail("send");
      if (w > 0) sent += static_cast<std::size_t>(w);
    }
    if (got < bytes && (p[1].revents & (POLLIN | POLLERR | POLLHUP))) {
      const ssize_t r = ::recv(from_prev_.get(), in_.data() + got % kBufferBytes,
                               std::min(bytes - got, kBufferBytes - got % kBufferBytes), 0);
      if (r == 0) throw std::runtime_error("stream limit: the previous rank closed its connection");
      if (r < 0 && errno != EAGAIN && errno != EINTR) fail("recv");
      if (r > 0) got += static_cast<std::size_t>(r);
    }
  }
}

double StreamLimit::seconds(Communicator& comm, std::size_t bytes, int iterations) {
  if (comm.size() < 2) return 0;
  const std::size_t each = stream_bytes(bytes);
  return time_back_to_back(comm, [&] {
    if (streaming_) stream(each);
  }, iterations);
}

}  // namespace riseml::bench
