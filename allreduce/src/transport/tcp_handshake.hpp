// The challenge-response every TCP connection runs before it carries data. Both ends prove
// they know the job secret without sending it: each answers the other's fresh random nonce
// with HMAC-SHA256(secret, role | ranks | connection | both nonces). The roles and ranks are
// inside the MAC, so an answer cannot be replayed in another direction or for another pair.
//
//   connector -> acceptor: hello {magic, version, from rank, to rank, connection, nonce_c}
//   acceptor -> connector: {nonce_a, mac_a}       (connector checks mac_a)
//   connector -> acceptor: {mac_c}                (acceptor checks mac_c)
//   acceptor -> connector: one byte 1             (accepted)
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <riseml/tcp_socket.hpp>

namespace riseml {

struct Hello {
  int from_rank = -1;
  int to_rank = -1;
  int connection = 0;
};

// Connector side. Throws CollectiveError(authentication) when the acceptor cannot prove it
// knows the secret, CollectiveError(setup) on I/O failure.
void handshake_as_connector(int fd, const std::vector<std::byte>& secret, const Hello& hello,
                            const std::string& peer_name, Deadline deadline);

// Acceptor side, one connection among many: advanced without blocking whenever its socket is
// ready, so a stranger that connects and stays silent holds up nobody but itself.
class AcceptorHandshake {
 public:
  AcceptorHandshake(Fd fd, const std::vector<std::byte>& secret, int my_rank, Deadline deadline);

  // Moves as far as the socket allows. True once the peer proved it knows the secret (then
  // hello() says who it claims to be and release() hands over the connection). Throws
  // CollectiveError(authentication) for a connection that fails the handshake or closes.
  bool advance();
  int fd() const { return fd_.get(); }
  short events() const;  // what to poll for next
  Deadline deadline() const { return deadline_; }
  const std::string& from() const { return from_; }  // "a.b.c.d:port"
  const Hello& hello() const { return hello_; }
  Fd release() { return std::move(fd_); }

 private:
  enum class State { read_hello, write_challenge, read_proof, write_ok, done };
  bool transfer(bool reading, std::size_t want);  // true once `want` bytes moved
  [[noreturn]] void refuse(const std::string& why) const;

  Fd fd_;
  const std::vector<std::byte>& secret_;
  int my_rank_;
  Deadline deadline_;
  std::string from_;
  State state_ = State::read_hello;
  Hello hello_{};
  unsigned char buffer_[64] = {};
  std::size_t moved_ = 0;
  unsigned char their_nonce_[32] = {}, my_nonce_[32] = {};
};

}  // namespace riseml
