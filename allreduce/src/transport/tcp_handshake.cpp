#include "tcp_handshake.hpp"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>

#include <riseml/collective_error.hpp>

#include <array>
#include <cerrno>
#include <cstring>

#include "../security/hmac_sha256.hpp"

namespace riseml {

namespace {

constexpr std::uint32_t kMagic = 0x52534d4c;  // "RSML"
constexpr std::uint32_t kVersion = 1;

struct HelloWire {
  std::uint32_t magic, version;
  std::int32_t from_rank, to_rank, connection;
  unsigned char nonce[32];
};
struct ChallengeWire {
  unsigned char nonce[32];
  unsigned char mac[32];
};

Mac role_mac(const std::vector<std::byte>& secret, char role, const Hello& h,
             const unsigned char* first_nonce, const unsigned char* second_nonce) {
  std::array<unsigned char, 1 + 12 + 64> msg{};
  msg[0] = static_cast<unsigned char>(role);
  const std::int32_t ids[3] = {h.from_rank, h.to_rank, h.connection};
  std::memcpy(msg.data() + 1, ids, 12);
  std::memcpy(msg.data() + 13, first_nonce, 32);
  std::memcpy(msg.data() + 45, second_nonce, 32);
  return hmac_sha256(secret, msg);
}

}  // namespace

void handshake_as_connector(int fd, const std::vector<std::byte>& secret, const Hello& hello,
                            const std::string& peer_name, Deadline deadline) {
  HelloWire w{kMagic, kVersion, hello.from_rank, hello.to_rank, hello.connection, {}};
  random_bytes(w.nonce, sizeof w.nonce);
  ChallengeWire c{};
  if (!write_all(fd, &w, sizeof w, deadline) || !read_all(fd, &c, sizeof c, deadline))
    throw CollectiveError(ErrorKind::setup, "connecting to " + peer_name +
                                                ": the handshake failed: " + std::strerror(errno));
  if (!mac_equal(role_mac(secret, 'A', hello, w.nonce, c.nonce), c.mac))
    throw CollectiveError(ErrorKind::authentication,
                          peer_name + " at " + peer_address(fd) +
                              " does not prove it knows the job secret; refusing it",
                          hello.to_rank);
  const Mac mine = role_mac(secret, 'C', hello, c.nonce, w.nonce);
  unsigned char accepted = 0;
  if (!write_all(fd, mine.data(), mine.size(), deadline) ||
      !read_all(fd, &accepted, 1, deadline) || accepted != 1)
    throw CollectiveError(ErrorKind::authentication,
                          peer_name + " did not accept this rank's proof of the job secret",
                          hello.to_rank);
}

AcceptorHandshake::AcceptorHandshake(Fd fd, const std::vector<std::byte>& secret, int my_rank,
                                     Deadline deadline)
    : fd_(std::move(fd)), secret_(secret), my_rank_(my_rank), deadline_(deadline),
      from_(peer_address(fd_.get())) {}

short AcceptorHandshake::events() const {
  return state_ == State::write_challenge || state_ == State::write_ok ? POLLOUT : POLLIN;
}

void AcceptorHandshake::refuse(const std::string& why) const {
  throw CollectiveError(ErrorKind::authentication, "a connection from " + from_ + " " + why);
}

bool AcceptorHandshake::transfer(bool reading, std::size_t want) {
  while (moved_ < want) {
    const ssize_t n = reading ? ::recv(fd_.get(), buffer_ + moved_, want - moved_, MSG_DONTWAIT)
                              : ::send(fd_.get(), buffer_ + moved_, want - moved_,
                                       MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      moved_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
    const std::string claim = state_ == State::read_hello
                                  ? ""
                                  : "claiming rank " + std::to_string(hello_.from_rank) + " ";
    refuse(claim + (n == 0 ? "closed before finishing the handshake"
                           : "failed during the handshake: " + std::string(std::strerror(errno))));
  }
  moved_ = 0;
  return true;
}

bool AcceptorHandshake::advance() {
  for (;;) {
    switch (state_) {
      case State::read_hello: {
        if (!transfer(true, sizeof(HelloWire))) return false;
        HelloWire w;
        std::memcpy(&w, buffer_, sizeof w);
        if (w.magic != kMagic || w.version != kVersion || w.to_rank != my_rank_)
          refuse("sent a malformed hello");
        hello_ = Hello{w.from_rank, w.to_rank, w.connection};
        std::memcpy(their_nonce_, w.nonce, sizeof their_nonce_);
        ChallengeWire c{};
        random_bytes(my_nonce_, sizeof my_nonce_);
        std::memcpy(c.nonce, my_nonce_, sizeof c.nonce);
        const Mac mine = role_mac(secret_, 'A', hello_, their_nonce_, my_nonce_);
        std::memcpy(c.mac, mine.data(), mine.size());
        std::memcpy(buffer_, &c, sizeof c);
        state_ = State::write_challenge;
        break;
      }
      case State::write_challenge:
        if (!transfer(false, sizeof(ChallengeWire))) return false;
        state_ = State::read_proof;
        break;
      case State::read_proof:
        if (!transfer(true, sizeof(Mac))) return false;
        if (!mac_equal(role_mac(secret_, 'C', hello_, my_nonce_, their_nonce_), buffer_))
          refuse("claiming rank " + std::to_string(hello_.from_rank) +
                 " does not prove it knows the job secret");
        buffer_[0] = 1;
        state_ = State::write_ok;
        break;
      case State::write_ok:
        if (!transfer(false, 1)) return false;
        state_ = State::done;
        return true;
      case State::done: return true;
    }
  }
}

}  // namespace riseml
