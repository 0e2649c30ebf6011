#include "waits_for.hpp"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <riseml/collective_error.hpp>

#include <algorithm>
#include <cstring>
#include <span>

#include "../security/hmac_sha256.hpp"
#include "peer_links.hpp"
#include "shm_segment.hpp"

namespace riseml {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr std::uint32_t kMagic = 0x52574631;  // "RWF1"
enum Kind : std::uint8_t { kQuery = 1, kAnswer = 2, kVerdict = 3 };
constexpr std::size_t kMostText = 900;
// The fixed part of a datagram, then the text, then the MAC of both.
constexpr std::size_t kFixed = 4 + 1 + 4 + 4 + 8 + 4 + 2;
constexpr std::size_t kMac = 32;

// A record older than this means its owner is not waiting now (stopped, hung, or busy in its
// own code); a waiting rank refreshes it every few ms.
constexpr auto kStale = 500ms;
// How long a rank gets to answer a query (it answers from its wait loop, every few ms).
constexpr auto kPatience = 500ms;
constexpr auto kResend = 100ms;

template <typename T>
void put(std::vector<unsigned char>& out, T v) {
  const auto* p = reinterpret_cast<const unsigned char*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}
template <typename T>
T get(const unsigned char*& p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}

std::string printable(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return s;
}

std::optional<sockaddr_in> parse_ipv4(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  const std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit))
    return std::nullopt;
  const int p = std::stoi(port);
  if (p <= 0 || p > 65535 || ::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) return std::nullopt;
  a.sin_port = htons(static_cast<std::uint16_t>(p));
  return a;
}

}  // namespace

struct WaitsFor::Message {
  Kind kind = kQuery;
  std::int32_t from = -1, to = -1;
  std::uint64_t nonce = 0;
  std::int32_t value = -1;  // answer: whom the sender waits on; verdict: the culprit
  std::string text;         // verdict: the message
};

WaitsFor::WaitsFor(int rank, std::vector<int> host_of, std::vector<std::byte> secret)
    : rank_(rank),
      host_of_(std::move(host_of)),
      secret_(std::move(secret)),
      addresses_(host_of_.size()),
      answers_(host_of_.size()) {}

WaitsFor::~WaitsFor() {
  if (fd_ >= 0) ::close(fd_);
}

std::string WaitsFor::open_udp(const std::string& ip) {
  auto a = parse_ipv4(ip + ":1");
  if (!a) throw CollectiveError(ErrorKind::setup, "cannot open the status socket on " + ip);
  a->sin_port = 0;
  fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  socklen_t len = sizeof *a;
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&*a), sizeof *a) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&*a), &len) != 0)
    throw CollectiveError(ErrorKind::setup, "cannot open the status socket on " + ip + ": " +
                                                std::strerror(errno));
  return ip + ":" + std::to_string(ntohs(a->sin_port));
}

void WaitsFor::set_udp_address(int r, const std::string& address) {
  if (r >= 0 && static_cast<std::size_t>(r) < addresses_.size() && r != rank_)
    addresses_[static_cast<std::size_t>(r)] = parse_ipv4(address);
}

void WaitsFor::say_waiting(int peer) {
  if (!record_) return;
  record_->waiting_on.store(peer + 1, std::memory_order_relaxed);
  record_->waiting_heartbeat_ns.store(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(),
      std::memory_order_release);
}

void WaitsFor::send(int to, const Message& m) noexcept {
  const auto& address = addresses_[static_cast<std::size_t>(to)];
  if (fd_ < 0 || !address) return;
  try {
    std::vector<unsigned char> out;
    const std::string text = m.text.substr(0, kMostText);
    put(out, kMagic);
    put(out, static_cast<std::uint8_t>(m.kind));
    put(out, m.from);
    put(out, m.to);
    put(out, m.nonce);
    put(out, m.value);
    put(out, static_cast<std::uint16_t>(text.size()));
    out.insert(out.end(), text.begin(), text.end());
    const Mac mac = hmac_sha256(secret_, out);
    out.insert(out.end(), mac.begin(), mac.end());
    ::sendto(fd_, out.data(), out.size(), MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&*address),
             sizeof *address);
  } catch (...) {
  }
}

void WaitsFor::drain(int waiting_on) {
  if (fd_ < 0) return;
  unsigned char buffer[kFixed + kMostText + kMac];
  // Bounded: a flood of datagrams on the port cannot hold a rank here.
  for (int i = 0; i < 64; ++i) {
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n < 0) return;
    const auto len = static_cast<std::size_t>(n);
    if (len < kFixed + kMac) continue;
    const unsigned char* p = buffer;
    Message m;
    if (get<std::uint32_t>(p) != kMagic) continue;
    m.kind = static_cast<Kind>(get<std::uint8_t>(p));
    m.from = get<std::int32_t>(p);
    m.to = get<std::int32_t>(p);
    m.nonce = get<std::uint64_t>(p);
    m.value = get<std::int32_t>(p);
    const auto text_len = get<std::uint16_t>(p);
    if (text_len > kMostText || len != kFixed + text_len + kMac) continue;
    const Mac mac = hmac_sha256(secret_, std::span<const unsigned char>(buffer, kFixed + text_len));
    if (!mac_equal(mac, buffer + kFixed + text_len)) continue;
    const int size = static_cast<int>(host_of_.size());
    if (m.to != rank_ || m.from < 0 || m.from >= size || m.from == rank_) continue;
    m.text.assign(reinterpret_cast<const char*>(p), text_len);
    switch (m.kind) {
      case kQuery: {
        Message answer;
        answer.kind = kAnswer;
        answer.from = rank_;
        answer.to = m.from;
        answer.nonce = m.nonce;
        answer.value = waiting_on;
        send(m.from, answer);
        break;
      }
      case kAnswer:
        if (m.nonce == nonce_ && m.value >= -1 && m.value < size)
          answers_[static_cast<std::size_t>(m.from)] = m.value;
        break;
      case kVerdict:
        if (!verdict_ && m.value >= 0 && m.value < size)
          verdict_ = Verdict{m.value, printable(m.text)};
        break;
    }
  }
}

std::optional<Verdict> WaitsFor::while_waiting(int peer) {
  say_waiting(peer);
  drain(peer);
  return verdict_;
}

void WaitsFor::ask(const std::vector<int>& asked, int waiting_on, std::chrono::milliseconds patience) {
  random_bytes(reinterpret_cast<unsigned char*>(&nonce_), sizeof nonce_);
  for (int r : asked) answers_[static_cast<std::size_t>(r)].reset();
  const auto until = Clock::now() + patience;
  auto next_send = Clock::now();
  for (;;) {
    const auto now = Clock::now();
    if (now >= next_send) {
      for (int r : asked) {
        Message q;
        q.kind = kQuery;
        q.from = rank_;
        q.to = r;
        q.nonce = nonce_;
        send(r, q);
      }
      next_send = now + kResend;
    }
    say_waiting(waiting_on);
    drain(waiting_on);
    if (verdict_ || now >= until) return;
    if (std::any_of(asked.begin(), asked.end(),
                    [&](int r) { return answers_[static_cast<std::size_t>(r)].has_value(); }))
      return;
    pollfd p{fd_, POLLIN, 0};
    ::poll(&p, 1, 10);
  }
}

Verdict WaitsFor::resolve(int first, const PeerLinks& links, const std::string& call,
                          const std::string& direction) {
  const int size = static_cast<int>(host_of_.size());
  std::vector<bool> seen(host_of_.size());
  seen[static_cast<std::size_t>(rank_)] = true;
  int current = first, through = 0;
  auto blame = [&](int r, const std::string& why) {
    const std::string how =
        r == first ? call + ", " + direction
                   : call + "; this rank waited on it through " + std::to_string(through) +
                         " other rank" + (through == 1 ? "" : "s");
    return Verdict{r, links.name(r) + " did not answer within " +
                          std::to_string(links.timeout().count()) + " ms (" + how + ")" + why};
  };
  for (int hops = 0; hops < size; ++hops) {
    if (verdict_) return *verdict_;
    const auto& link = links.links()[static_cast<std::size_t>(current)];
    const std::optional<PeerWait> wait = link ? link->peer_wait() : std::nullopt;
    int next = -1;
    if (wait) {
      // Its own record; a stale one gets a moment to be refreshed (it may be between two waits).
      auto w = *wait;
      const auto until = Clock::now() + kStale / 2;
      while (Clock::now() - w.said_at > kStale && Clock::now() < until) {
        say_waiting(first);
        drain(first);
        ::usleep(10000);
        w = link->peer_wait().value_or(w);
      }
      if (Clock::now() - w.said_at > kStale)
        return blame(current, through > 0 ? ": it is not waiting in this call (stopped, hung, or busy elsewhere)" : "");
      next = w.waiting_on;
    } else if (addresses_[static_cast<std::size_t>(current)]) {
      ask({current}, first, kPatience);
      if (verdict_) return *verdict_;
      if (!answers_[static_cast<std::size_t>(current)]) {
        std::vector<int> host_mates;
        for (int r = 0; r < size; ++r)
          if (r != current && r != rank_ && host_of_[static_cast<std::size_t>(r)] ==
                                                  host_of_[static_cast<std::size_t>(current)] &&
              addresses_[static_cast<std::size_t>(r)])
            host_mates.push_back(r);
        if (host_mates.empty())
          return blame(current, ": it does not answer (stopped or hung, or its host is unreachable)");
        ask(host_mates, first, kPatience);
        if (verdict_) return *verdict_;
        const bool reachable = std::any_of(host_mates.begin(), host_mates.end(), [&](int r) {
          return answers_[static_cast<std::size_t>(r)].has_value();
        });
        return blame(current, reachable ? ": its host answers, the rank does not (stopped or hung)"
                                        : ": no rank of its host answers, the host is unreachable");
      }
      next = *answers_[static_cast<std::size_t>(current)];
    } else {
      return blame(current, "");
    }
    if (next < 0 || next >= size) return blame(current, "");
    if (seen[static_cast<std::size_t>(next)] || next == current) return blame(first, "");
    seen[static_cast<std::size_t>(current)] = true;
    current = next;
    ++through;
  }
  return blame(first, "");
}

std::optional<Verdict> WaitsFor::verdict_now() {
  drain(-1);
  return verdict_;
}

void WaitsFor::announce(const Verdict& v) noexcept {
  if (fd_ < 0 || v.culprit < 0) return;
  for (int r = 0; r < static_cast<int>(addresses_.size()); ++r) {
    if (r == rank_ || r == v.culprit) continue;
    Message m;
    m.kind = kVerdict;
    m.from = rank_;
    m.to = r;
    m.value = v.culprit;
    try {
      m.text = v.message;
    } catch (...) {
      return;
    }
    send(r, m);
  }
}

}  // namespace riseml
