// CommunicatorOptions::from_environment: the one place the core reads its RISEML_* variables.
// Everything below (Context, transports, algorithms, kernels) gets the values through the
// options. Empty counts as unset, except where noted.
#include <riseml/collective_error.hpp>
#include <riseml/communicator.hpp>

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

// The tuning knobs below have always been read leniently (strtoull: no digits count as 0);
// kept so, a malformed value means what it meant before.
std::size_t lenient_number(const char* value) {
  return static_cast<std::size_t>(std::strtoull(value, nullptr, 10));
}

}  // namespace

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
    else if (s == "direct") o.algorithm = Algorithm::direct;
    else
      throw CollectiveError(ErrorKind::invalid_argument,
                            std::string("RISEML_ALGORITHM=") + v +
                                ": expected auto, ring, halving_doubling (hd), hierarchical or direct");
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
  if (const char* v = get("RISEML_HOST_KEY")) o.host_key = v;
  if (const char* v = get("RISEML_SMALL_BYTES"))
    o.small_message_bytes =
        static_cast<std::size_t>(parse_number("RISEML_SMALL_BYTES", v, 0, 1ll << 40));
  if (const char* v = get("RISEML_DIRECT_BYTES"))
    o.direct_bytes = static_cast<std::size_t>(parse_number("RISEML_DIRECT_BYTES", v, 0, 1ll << 40));
  if (const char* v = get("RISEML_SHM_SLOTS"))
    o.shm_slots = static_cast<int>(parse_number("RISEML_SHM_SLOTS", v, 2, 1024));
  if (const char* v = get("RISEML_SHM_SLOT_KIB"))
    o.shm_slot_kib = static_cast<int>(parse_number("RISEML_SHM_SLOT_KIB", v, 4, 65536));
  if (const char* v = get("RISEML_SPIN_US"))
    o.spin_time = std::chrono::microseconds(parse_number("RISEML_SPIN_US", v, 0, 1000000));
  // Here an empty value is 0 (chunking off), as it has always been.
  if (const char* v = std::getenv("RISEML_RING_CHUNK_KIB")) o.ring_chunk_kib = lenient_number(v);
  if (const char* v = get("RISEML_SINGLE_COPY_BYTES")) o.single_copy_bytes = lenient_number(v);
  if (const char* v = get("RISEML_STREAMING_STORES"))
    o.streaming_stores = std::string_view(v) != "0";
  if (const char* v = get("RISEML_KERNELS"); v && std::string_view(v) == "generic")
    o.kernels = KernelChoice::generic;
  return o;
}

}  // namespace riseml
