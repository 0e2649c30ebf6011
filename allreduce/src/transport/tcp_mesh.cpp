#include "tcp_mesh.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <riseml/collective_error.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "tcp_handshake.hpp"
#include "tcp_link.hpp"
#include "tcp_socket.hpp"

namespace riseml {

namespace {

[[noreturn]] void throw_setup(const std::string& what) {
  throw CollectiveError(ErrorKind::setup, what + ": " + std::strerror(errno));
}

sockaddr_in parse_address(const std::string& address) {
  const auto colon = address.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (colon == std::string::npos ||
      ::inet_pton(AF_INET, address.substr(0, colon).c_str(), &a.sin_addr) != 1)
    throw CollectiveError(ErrorKind::setup, "bad TCP address " + address);
  a.sin_port = htons(static_cast<std::uint16_t>(std::stoi(address.substr(colon + 1))));
  return a;
}

// Connects before the deadline, retrying while the peer is not listening yet.
Fd connect_to(const std::string& address, const std::string& peer_name, Deadline deadline) {
  const sockaddr_in a = parse_address(address);
  for (;;) {
    Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) throw_setup("socket");
    tune_socket(fd.get());
    int r = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a);
    if (r != 0 && errno == EINPROGRESS) {
      pollfd p{fd.get(), POLLOUT, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (::poll(&p, 1, static_cast<int>(std::max<long long>(0, left.count()))) == 1) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        errno = err;
        r = err == 0 ? 0 : -1;
      } else {
        errno = ETIMEDOUT;
      }
    }
    if (r == 0) return fd;
    if (std::chrono::steady_clock::now() >= deadline)
      throw CollectiveError(ErrorKind::setup, "cannot connect to " + peer_name + " at " + address +
                                                  ": " + std::strerror(errno));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

TcpMesh::TcpMesh(const CommunicatorOptions& options, int rank, std::vector<std::byte> secret)
    : options_(options), rank_(rank), secret_(std::move(secret)) {
  const std::string ip = listen_address(options.iface);
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) throw_setup("socket");
  sockaddr_in a = parse_address(ip + ":0");
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(listen_fd_);
    throw_setup("bind " + ip);
  }
  socklen_t len = sizeof a;
  if (::listen(listen_fd_, 256) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(listen_fd_);
    throw_setup("listen " + ip);
  }
  address_ = ip + ":" + std::to_string(ntohs(a.sin_port));
}

TcpMesh::~TcpMesh() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

std::string TcpMesh::address() const { return address_; }

std::vector<std::unique_ptr<Link>> TcpMesh::connect(const std::vector<int>& peers,
                                                    const std::vector<std::string>& addresses,
                                                    const std::vector<std::string>& names,
                                                    Deadline deadline) {
  const int k = options_.tcp_connections;
  const std::size_t size = names.size();
  std::vector<std::vector<Fd>> conns(size);
  for (auto& c : conns) c.resize(static_cast<std::size_t>(k));
  // Ranks connect to the lower ranks and accept the higher ones: rank 0 only accepts, so
  // every rank is eventually accepted and nobody waits in a cycle.
  std::size_t expected = 0;
  for (int p : peers) {
    if (p > rank_) {
      expected += static_cast<std::size_t>(k);
      continue;
    }
    for (int c = 0; c < k; ++c) {
      Fd fd = connect_to(addresses[static_cast<std::size_t>(p)], names[static_cast<std::size_t>(p)], deadline);
      handshake_as_connector(fd.get(), secret_, Hello{rank_, p, c}, names[static_cast<std::size_t>(p)],
                             deadline);
      conns[static_cast<std::size_t>(p)][static_cast<std::size_t>(c)] = std::move(fd);
    }
  }
  while (expected > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      std::string missing;
      for (int p : peers)
        if (p > rank_ && !conns[static_cast<std::size_t>(p)][0]) missing += " " + names[static_cast<std::size_t>(p)];
      throw CollectiveError(ErrorKind::timeout,
                            "rank " + std::to_string(rank_) + ": no authenticated connection from" +
                                missing + " within the timeout");
    }
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(std::min<long long>(left.count(), 100))) <= 0) continue;
    Fd fd(::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd) continue;
    tune_socket(fd.get());
    try {
      // A stranger gets a few seconds to prove itself, never the whole setup time.
      const Deadline until = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(5));
      const Hello h = handshake_as_acceptor(fd.get(), secret_, rank_, until);
      const bool known = h.from_rank > rank_ && static_cast<std::size_t>(h.from_rank) < size &&
                         h.connection >= 0 && h.connection < k &&
                         std::find(peers.begin(), peers.end(), h.from_rank) != peers.end();
      if (!known || conns[static_cast<std::size_t>(h.from_rank)][static_cast<std::size_t>(h.connection)])
        throw CollectiveError(ErrorKind::authentication,
                              "an authenticated connection claims rank " +
                                  std::to_string(h.from_rank) + " connection " +
                                  std::to_string(h.connection) + ", which is not expected here");
      conns[static_cast<std::size_t>(h.from_rank)][static_cast<std::size_t>(h.connection)] = std::move(fd);
      --expected;
    } catch (const CollectiveError& e) {
      if (e.kind() != ErrorKind::authentication && e.kind() != ErrorKind::setup) throw;
      // Refused and logged; its bytes are never used.
      std::fprintf(stderr, "riseml: rank %d refused a connection: %s\n", rank_, e.what());
    }
  }
  ::close(listen_fd_);
  listen_fd_ = -1;

  std::vector<std::unique_ptr<Link>> links(size);
  for (int p : peers)
    links[static_cast<std::size_t>(p)] = std::make_unique<TcpLink>(
        std::move(conns[static_cast<std::size_t>(p)]), p, names[static_cast<std::size_t>(p)]);
  return links;
}

}  // namespace riseml
