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
#include "refusal_log.hpp"
#include "tcp_link.hpp"
#include <riseml/tcp_socket.hpp>

namespace riseml {

namespace {

// A peer's handshake takes milliseconds; a stranger gets this long to prove itself.
constexpr auto kHandshakeTime = std::chrono::seconds(5);
// Handshakes in progress at once; beyond this the oldest is dropped.
constexpr std::size_t kMaxHandshakes = 64;

[[noreturn]] void throw_setup(const std::string& what) {
  throw CollectiveError(ErrorKind::setup, what + ": " + std::strerror(errno));
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
    const std::string& name = names[static_cast<std::size_t>(p)];
    for (int c = 0; c < k; ++c) {
      for (;;) {
        Fd fd = connect_to(addresses[static_cast<std::size_t>(p)], name, deadline);
        try {
          handshake_as_connector(fd.get(), secret_, Hello{rank_, p, c}, name, deadline);
          conns[static_cast<std::size_t>(p)][static_cast<std::size_t>(c)] = std::move(fd);
          break;
        } catch (const CollectiveError& e) {
          // The acceptor dropped the connection (its room for handshakes was full of
          // strangers): try again. A failed proof is final.
          if (e.kind() != ErrorKind::setup || std::chrono::steady_clock::now() >= deadline) throw;
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
    }
  }
  accept_peers(peers, names, expected, conns, deadline);
  ::close(listen_fd_);
  listen_fd_ = -1;

  std::vector<std::unique_ptr<Link>> links(size);
  for (int p : peers)
    links[static_cast<std::size_t>(p)] = std::make_unique<TcpLink>(
        std::move(conns[static_cast<std::size_t>(p)]), p, names[static_cast<std::size_t>(p)]);
  return links;
}

void TcpMesh::accept_peers(const std::vector<int>& peers, const std::vector<std::string>& names,
                           std::size_t expected, std::vector<std::vector<Fd>>& conns,
                           Deadline deadline) {
  const int k = options_.tcp_connections;
  const std::size_t size = names.size();
  RefusalLog refusals(rank_);
  // Every connection runs its handshake at once with the others and gets a few seconds of its
  // own, never the whole setup time; when too many are open, the oldest is dropped (a peer
  // whose handshake is dropped connects again).
  std::vector<std::unique_ptr<AcceptorHandshake>> pending;
  std::vector<pollfd> fds;
  while (expected > 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      std::string missing;
      for (int p : peers)
        for (int c = 0; c < k; ++c)
          if (p > rank_ && !conns[static_cast<std::size_t>(p)][static_cast<std::size_t>(c)]) {
            missing += " " + names[static_cast<std::size_t>(p)];
            break;
          }
      std::string strangers;
      if (refusals.total() > 0)
        strangers = " (" + std::to_string(refusals.total()) +
                    " other connection(s) were refused meanwhile)";
      throw CollectiveError(ErrorKind::timeout, "rank " + std::to_string(rank_) +
                                                    ": no authenticated connection from" +
                                                    missing + " within the timeout" + strangers);
    }
    std::erase_if(pending, [&](const auto& h) {
      if (h->deadline() > now) return false;
      refusals.refused("a connection from " + h->from() +
                       " did not finish its handshake in time");
      return true;
    });
    Deadline wake = std::min(deadline, now + std::chrono::milliseconds(100));
    fds.assign(1, pollfd{listen_fd_, POLLIN, 0});
    for (const auto& h : pending) {
      fds.push_back(pollfd{h->fd(), h->events(), 0});
      wake = std::min(wake, h->deadline());
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count();
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(0, wait))) <= 0)
      continue;
    // Handshakes first (the new connections are appended after them).
    std::vector<std::unique_ptr<AcceptorHandshake>> still;
    for (std::size_t i = 0; i < pending.size(); ++i) {
      auto& h = pending[i];
      if (fds[i + 1].revents == 0) {
        still.push_back(std::move(h));
        continue;
      }
      try {
        if (!h->advance()) {
          still.push_back(std::move(h));
          continue;
        }
        const Hello& hello = h->hello();
        const bool known = hello.from_rank > rank_ && static_cast<std::size_t>(hello.from_rank) < size &&
                           hello.connection >= 0 && hello.connection < k &&
                           std::find(peers.begin(), peers.end(), hello.from_rank) != peers.end();
        Fd* slot = known ? &conns[static_cast<std::size_t>(hello.from_rank)]
                                 [static_cast<std::size_t>(hello.connection)]
                         : nullptr;
        if (!slot || *slot)
          throw CollectiveError(ErrorKind::authentication,
                                "an authenticated connection from " + h->from() + " claims rank " +
                                    std::to_string(hello.from_rank) + " connection " +
                                    std::to_string(hello.connection) +
                                    ", which is not expected here");
        *slot = h->release();
        --expected;
      } catch (const CollectiveError& e) {
        if (e.kind() != ErrorKind::authentication) throw;
        refusals.refused(e.what());  // its bytes are never used
      }
    }
    pending = std::move(still);
    if (fds[0].revents != 0) {
      for (;;) {
        Fd fd(::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC));
        if (!fd) break;
        tune_socket(fd.get());
        if (pending.size() >= kMaxHandshakes) {
          refusals.refused("a connection from " + pending.front()->from() +
                           " was dropped unfinished to make room for newer ones");
          pending.erase(pending.begin());
        }
        const Deadline until =
            std::min(deadline, std::chrono::steady_clock::now() + kHandshakeTime);
        pending.push_back(std::make_unique<AcceptorHandshake>(std::move(fd), secret_, rank_, until));
      }
    }
  }
}

}  // namespace riseml
