#include "environment.hpp"

#include <sched.h>

#include <riseml/collective_error.hpp>
#include <riseml/communicator.hpp>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>

namespace riseml {

namespace {

const char* get(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

long long parse_number(const char* name, const char* value, long long lo, long long hi) {
  long long n = 0;
  std::string_view s(value);
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || ptr != s.data() + s.size() || n < lo || n > hi)
    throw CollectiveError(ErrorKind::invalid_argument,
                          std::string(name) + "=" + value + ": expected a whole number from " +
                              std::to_string(lo) + " to " + std::to_string(hi));
  return n;
}

}  // namespace

namespace env {

int shm_slots() {
  const char* v = get("RISEML_SHM_SLOTS");
  return v ? static_cast<int>(parse_number("RISEML_SHM_SLOTS", v, 2, 1024)) : 8;
}

std::uint64_t shm_slot_bytes(std::uint32_t channels, std::uint32_t slots) {
  if (const char* v = get("RISEML_SHM_SLOT_KIB"))
    return static_cast<std::uint64_t>(parse_number("RISEML_SHM_SLOT_KIB", v, 4, 65536)) << 10;
  const std::uint64_t budget = 16ull << 20;
  std::uint64_t bytes = budget / std::max<std::uint64_t>(1, std::uint64_t(channels) * slots);
  bytes = std::clamp<std::uint64_t>(bytes, 16 << 10, 128 << 10);
  return bytes & ~std::uint64_t{4095};
}

std::chrono::microseconds spin_time(int local_ranks) {
  if (const char* v = get("RISEML_SPIN_US"))
    return std::chrono::microseconds(parse_number("RISEML_SPIN_US", v, 0, 1000000));
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int usable = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  return std::chrono::microseconds(local_ranks > usable ? 0 : 50);
}

std::size_t small_message_bytes() {
  const char* v = get("RISEML_SMALL_BYTES");
  return v ? static_cast<std::size_t>(parse_number("RISEML_SMALL_BYTES", v, 0, 1ll << 40))
           : 64 << 10;
}

}  // namespace env

std::string_view to_string(Algorithm a) {
  switch (a) {
    case Algorithm::automatic: return "auto";
    case Algorithm::ring: return "ring";
    case Algorithm::halving_doubling: return "halving_doubling";
    case Algorithm::hierarchical: return "hierarchical";
  }
  return "?";
}

std::string_view to_string(TransportChoice t) {
  switch (t) {
    case TransportChoice::automatic: return "auto";
    case TransportChoice::shm: return "shm";
    case TransportChoice::tcp: return "tcp";
    case TransportChoice::inproc: return "inproc";
  }
  return "?";
}

CommunicatorOptions CommunicatorOptions::from_environment() {
  CommunicatorOptions o;
  if (const char* v = get("RISEML_TIMEOUT_S"))
    o.timeout = std::chrono::seconds(parse_number("RISEML_TIMEOUT_S", v, 1, 86400 * 7));
  if (const char* v = get("RISEML_ALGORITHM")) {
    std::string_view s(v);
    if (s == "auto") o.algorithm = Algorithm::automatic;
    else if (s == "ring") o.algorithm = Algorithm::ring;
    else if (s == "halving_doubling" || s == "hd") o.algorithm = Algorithm::halving_doubling;
    else if (s == "hierarchical") o.algorithm = Algorithm::hierarchical;
    else
      throw CollectiveError(ErrorKind::invalid_argument,
                            std::string("RISEML_ALGORITHM=") + v +
                                ": expected auto, ring, halving_doubling (hd) or hierarchical");
  }
  if (const char* v = get("RISEML_TRANSPORT")) {
    std::string_view s(v);
    if (s == "auto") o.transport = TransportChoice::automatic;
    else if (s == "shm") o.transport = TransportChoice::shm;
    else if (s == "tcp") o.transport = TransportChoice::tcp;
    else if (s == "inproc") o.transport = TransportChoice::inproc;
    else
      throw CollectiveError(ErrorKind::invalid_argument,
                            std::string("RISEML_TRANSPORT=") + v + ": expected auto, shm, tcp or inproc");
  }
  if (const char* v = get("RISEML_IFACE")) o.iface = v;
  if (const char* v = get("RISEML_TCP_CONNECTIONS"))
    o.tcp_connections = static_cast<int>(parse_number("RISEML_TCP_CONNECTIONS", v, 1, 16));
  if (const char* v = get("RISEML_HALF_REDUCE")) {
    std::string_view s(v);
    if (s == "wire") o.half_reduce = HalfReduce::wire;
    else if (s == "float32") o.half_reduce = HalfReduce::float32;
    else
      throw CollectiveError(ErrorKind::invalid_argument,
                            std::string("RISEML_HALF_REDUCE=") + v +
                                ": expected wire (16 bits on the wire, rounded every step) or float32 "
                                "(accumulated in float32, rounded once)");
  }
  return o;
}

}  // namespace riseml
