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

#include "tcp_socket.hpp"

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

// Acceptor side: returns the authenticated hello; throws CollectiveError(authentication) for a
// connection that does not prove it knows the secret (the caller logs it and drops it).
Hello handshake_as_acceptor(int fd, const std::vector<std::byte>& secret, int my_rank,
                            Deadline deadline);

}  // namespace riseml
