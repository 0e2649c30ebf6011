// The wire format of the elastic rendezvous store: a mutual HMAC handshake over the job secret
// (a stranger on the port learns nothing and can change nothing), then length-prefixed frames,
// each an operation byte and a list of byte-string fields. Decoding never trusts a length.
#pragma once

#include <riseml/tcp_socket.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace riseml::elastic::protocol {

constexpr std::string_view magic = "RMLSTOR1";
constexpr std::size_t nonce_bytes = 32;
constexpr std::size_t mac_bytes = 32;
// Rendezvous values are host facts and addresses (bytes to kilobytes); anything near this
// limit is not ours.
constexpr std::uint32_t max_frame_bytes = 16u << 20;
constexpr std::size_t max_fields = 4096;

using Nonce = std::array<unsigned char, nonce_bytes>;
using Mac = std::array<unsigned char, mac_bytes>;

// What the client ('c') or the server ('s') proves: HMAC-SHA256(secret, role | both nonces).
Mac handshake_mac(std::span<const std::byte> secret, char role, const Nonce& server_nonce,
                  const Nonce& client_nonce);
bool mac_equal(const Mac& a, const Mac& b);  // constant time
Nonce random_nonce();

enum Op : unsigned char {
  put = 'P',    // key, value
  get = 'G',    // key
  fence = 'F',  // name, timeout ms, rank, members (comma-separated ranks)
};
enum Reply : unsigned char {
  ok = 'K',
  value = 'V',    // value
  missing = 'M',  // nothing under the key
  timed_out = 'T',  // the ranks that did not arrive (comma-separated)
  refused = 'E',  // a message: the request made no sense
};

// A worker's failure report is a put under this prefix (see FailureReport).
constexpr std::string_view failure_key_prefix = "failure.";
// A joining worker's "I am up" is a put under this prefix (ready.<rank>).
constexpr std::string_view ready_key_prefix = "ready.";

struct Message {
  unsigned char op = 0;
  std::vector<std::string> fields;
};

std::string encode(const Message& m);
std::optional<Message> decode(std::string_view body);

// One frame (u32 little-endian length, then the body); false on a closed socket or the deadline.
bool send_frame(int fd, const Message& m, Deadline deadline);
// nullopt on a closed socket, the deadline, an oversized or malformed frame.
std::optional<Message> receive_frame(int fd, Deadline deadline);

// "0,1,5" <-> {0, 1, 5}; nullopt on anything else (empty items, signs, numbers over 2^24).
std::string format_ranks(const std::vector<int>& ranks);
std::optional<std::vector<int>> parse_ranks(std::string_view text);
std::optional<long long> parse_count(std::string_view text);  // 0 .. 2^40, digits only

}  // namespace riseml::elastic::protocol
