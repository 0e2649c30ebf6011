// The errors links raise when a peer disagrees with this rank or goes away, worded the same way
// on every transport.
#pragma once

#include <riseml/collective_error.hpp>

#include <cstddef>
#include <string>

#include "call_tag.hpp"

namespace riseml {

[[noreturn]] inline void throw_tag_mismatch(const std::string& peer_name, int peer,
                                            const CallTag& theirs, const CallTag& mine) {
  throw CollectiveError(ErrorKind::mismatch,
                        "mismatched calls: " + peer_name + " is in " + describe(theirs) +
                            " while this rank is in " + describe(mine),
                        peer);
}

[[noreturn]] inline void throw_size_mismatch(const std::string& peer_name, int peer,
                                             std::size_t theirs, std::size_t mine,
                                             const CallTag& tag) {
  throw CollectiveError(ErrorKind::mismatch,
                        "mismatched sizes: " + peer_name + " sent " + std::to_string(theirs) +
                            " bytes where this rank expected " + std::to_string(mine) + " (" +
                            describe(tag) + ")",
                        peer);
}

// `culprit`: the rank the peer blamed when it gave up (its reason names it), -1: none. Then the
// error blames that rank, not the messenger, so every survivor names the same culprit.
[[noreturn]] inline void throw_peer_aborted(const std::string& peer_name, int peer,
                                            const std::string& reason, int culprit = -1) {
  if (culprit >= 0 && culprit != peer) throw CollectiveError(ErrorKind::peer_failed, reason, culprit);
  throw CollectiveError(ErrorKind::peer_failed, peer_name + " failed: " + reason, peer);
}

// A culprit as it arrives from a peer (1 + rank, 0: none), checked against the world size.
inline int culprit_from_wire(std::int64_t value, int world_size) {
  return value >= 1 && value <= world_size ? static_cast<int>(value - 1) : -1;
}

}  // namespace riseml
