#include "tcp_handshake.hpp"

#include <arpa/inet.h>

#include <riseml/collective_error.hpp>

#include <array>
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

Hello handshake_as_acceptor(int fd, const std::vector<std::byte>& secret, int my_rank,
                            Deadline deadline) {
  HelloWire w{};
  const std::string from = peer_address(fd);
  if (!read_all(fd, &w, sizeof w, deadline))
    throw CollectiveError(ErrorKind::authentication,
                          "a connection from " + from + " sent no valid hello");
  if (w.magic != kMagic || w.version != kVersion || w.to_rank != my_rank)
    throw CollectiveError(ErrorKind::authentication,
                          "a connection from " + from + " sent a malformed hello");
  const Hello hello{w.from_rank, w.to_rank, w.connection};
  ChallengeWire c{};
  random_bytes(c.nonce, sizeof c.nonce);
  const Mac mine = role_mac(secret, 'A', hello, w.nonce, c.nonce);
  std::memcpy(c.mac, mine.data(), mine.size());
  unsigned char theirs[32];
  if (!write_all(fd, &c, sizeof c, deadline) || !read_all(fd, theirs, sizeof theirs, deadline))
    throw CollectiveError(ErrorKind::authentication,
                          "a connection from " + from + " claiming rank " +
                              std::to_string(hello.from_rank) + " did not answer the challenge");
  if (!mac_equal(role_mac(secret, 'C', hello, c.nonce, w.nonce), theirs))
    throw CollectiveError(ErrorKind::authentication,
                          "a connection from " + from + " claiming rank " +
                              std::to_string(hello.from_rank) +
                              " does not prove it knows the job secret");
  const unsigned char ok = 1;
  if (!write_all(fd, &ok, 1, deadline))
    throw CollectiveError(ErrorKind::setup, "a connection from " + from + " closed early");
  return hello;
}

}  // namespace riseml
