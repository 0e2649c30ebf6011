// One cycle's exchange between the ranks: this rank's message (flags, rank 0's stall verdicts,
// its new requests, cached ones as an id) goes to every rank, and every rank's message is
// decoded into the tensor table, which the negotiator owns with the response cache and what
// the ranks said about themselves (joined, stuck). One allgather of fixed slots carries the
// message when it fits (the steady state of a training loop); an allgatherv follows only when
// some rank's message does not fit.
#pragma once

#include "response_cache.hpp"
#include "tensor_table.hpp"
#include "wire.hpp"

#include <riseml/communicator.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace riseml::engine {

// What the ranks said this cycle beyond their requests (those went into the table).
struct CycleNews {
  std::chrono::steady_clock::time_point now;  // when the messages arrived
  int shutdown_by = -1;                       // the first rank that asked to shut down
  bool shutdown_leaving = false;              // it did so because its process exits
  std::vector<StallVerdict> verdicts;         // rank 0's
};

class Negotiator {
 public:
  Negotiator(Communicator& comm, int rank, int size);

  // Adds this rank's request `r` to `mine`: as its cache id when the cache holds its name with
  // the same metadata from this rank, else in full.
  void offer(Message& mine, const Request& r) const;
  // The collective exchange. Throws CollectiveError(mismatch) for a malformed message or a
  // cache id the cache does not hold (a rank out of step), naming that rank.
  CycleNews exchange(const Message& mine);

  TensorTable& table() { return table_; }
  const TensorTable& table() const { return table_; }
  ResponseCache& cache() { return cache_; }

  // Ranks that announced join() since every rank last had; the last of them.
  const std::vector<bool>& joined() const { return joined_; }
  bool any_joined() const;
  // Some other rank submitted a tensor that `rank` has not: they wait for it.
  bool awaits(int rank) const;
  bool all_joined() const;
  int last_joined() const { return last_joined_; }
  void clear_joins() { joined_.assign(joined_.size(), false); }
  // Each rank's say on deadlock this cycle (Message::stuck).
  const std::vector<bool>& stuck() const { return stuck_; }

 private:
  Communicator& comm_;
  int rank_;
  int size_;
  TensorTable table_;
  ResponseCache cache_;
  std::vector<bool> joined_;
  int last_joined_ = -1;
  std::vector<bool> stuck_;
};

}  // namespace riseml::engine
