// Small socket helpers of the TCP transport: an owning descriptor, the address to listen on,
// and blocking-with-deadline reads and writes for the handshake. Public so that tools measuring
// against the transport (riseml-bench's stream limit) listen and tune sockets as it does.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>

namespace riseml {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept;
  ~Fd();
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

using Deadline = std::chrono::steady_clock::time_point;

// The IPv4 address to listen on: RISEML_IFACE as an address or an interface name; else the
// first non-loopback interface that is up; else 127.0.0.1. Throws CollectiveError(setup).
std::string listen_address(const std::string& iface);

// "a.b.c.d:port" as a socket address. Throws CollectiveError(setup) on anything else.
sockaddr_in parse_address(const std::string& address);

// Non-blocking, TCP_NODELAY, large buffers.
void tune_socket(int fd);

// All or nothing before the deadline; false on EOF, error or timeout (errno says which).
bool write_all(int fd, const void* data, std::size_t n, Deadline deadline);
bool read_all(int fd, void* data, std::size_t n, Deadline deadline);

// "a.b.c.d:port" of the peer of a connected socket.
std::string peer_address(int fd);

}  // namespace riseml
