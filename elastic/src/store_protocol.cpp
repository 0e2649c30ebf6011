#include "store_protocol.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace riseml::elastic::protocol {

Mac handshake_mac(std::span<const std::byte> secret, char role, const Nonce& server_nonce,
                  const Nonce& client_nonce) {
  std::string message(1, role);
  message.append(reinterpret_cast<const char*>(server_nonce.data()), server_nonce.size());
  message.append(reinterpret_cast<const char*>(client_nonce.data()), client_nonce.size());
  Mac mac{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac.data(),
           &length) == nullptr ||
      length != mac.size())
    throw std::runtime_error("HMAC-SHA256 failed (OpenSSL)");
  return mac;
}

bool mac_equal(const Mac& a, const Mac& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

Nonce random_nonce() {
  Nonce n{};
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1)
    throw std::runtime_error("no random bytes from OpenSSL");
  return n;
}

namespace {
void append_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
std::uint32_t read_u32(std::string_view s, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + static_cast<std::size_t>(i)]))
         << (8 * i);
  return v;
}
}  // namespace

std::string encode(const Message& m) {
  std::string out(1, static_cast<char>(m.op));
  for (const auto& f : m.fields) {
    append_u32(out, static_cast<std::uint32_t>(f.size()));
    out += f;
  }
  return out;
}

std::optional<Message> decode(std::string_view body) {
  if (body.empty()) return std::nullopt;
  Message m;
  m.op = static_cast<unsigned char>(body[0]);
  std::size_t at = 1;
  while (at < body.size()) {
    if (body.size() - at < 4 || m.fields.size() >= max_fields) return std::nullopt;
    const std::uint32_t n = read_u32(body, at);
    at += 4;
    if (n > body.size() - at) return std::nullopt;
    m.fields.emplace_back(body.substr(at, n));
    at += n;
  }
  return m;
}

bool send_frame(int fd, const Message& m, Deadline deadline) {
  const std::string body = encode(m);
  if (body.size() > max_frame_bytes) return false;
  std::string frame;
  append_u32(frame, static_cast<std::uint32_t>(body.size()));
  frame += body;
  return write_all(fd, frame.data(), frame.size(), deadline);
}

std::optional<Message> receive_frame(int fd, Deadline deadline) {
  char header[4];
  if (!read_all(fd, header, sizeof header, deadline)) return std::nullopt;
  const std::uint32_t n = read_u32(std::string_view(header, 4), 0);
  if (n == 0 || n > max_frame_bytes) return std::nullopt;
  std::string body(n, '\0');
  if (!read_all(fd, body.data(), n, deadline)) return std::nullopt;
  return decode(body);
}

std::string format_ranks(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

std::optional<long long> parse_count(std::string_view text) {
  if (text.empty() || text.size() > 13) return std::nullopt;
  long long v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v > (1LL << 40)) return std::nullopt;
  return v;
}

std::optional<std::vector<int>> parse_ranks(std::string_view text) {
  std::vector<int> out;
  if (text.empty()) return out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = text.find(',', at);
    const std::string_view item =
        text.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
    const auto v = parse_count(item);
    if (!v || *v >= (1 << 24)) return std::nullopt;
    out.push_back(static_cast<int>(*v));
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  return out;
}

}  // namespace riseml::elastic::protocol
