// The one exception type of the collectives core. Its kind says what went wrong; its message
// names the rank (and host) at fault where one is known.
#pragma once

#include <stdexcept>
#include <string>

namespace riseml {

enum class ErrorKind {
  invalid_argument,  // a bad argument on this rank (null buffer, root out of range, ...)
  mismatch,          // ranks disagree on the call: collective, size, type, op or algorithm
  peer_failed,       // a peer died, closed its connection or aborted
  timeout,           // a peer did not answer within the timeout
  authentication,    // a connection could not prove knowledge of the job secret
  setup,             // transports could not be set up (rendezvous, sockets, shared memory)
  system,            // an operating system call failed
  aborted,           // the communicator failed earlier and cannot be used any more
};

class CollectiveError : public std::runtime_error {
 public:
  CollectiveError(ErrorKind kind, const std::string& what, int culprit_rank = -1)
      : std::runtime_error(what), kind_(kind), culprit_rank_(culprit_rank) {}

  ErrorKind kind() const { return kind_; }
  // The rank that caused it (died, mismatched, timed out), or -1 when not known.
  int culprit_rank() const { return culprit_rank_; }

 private:
  ErrorKind kind_;
  int culprit_rank_;
};

}  // namespace riseml
