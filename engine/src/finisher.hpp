// Ends a table entry on this rank, whoever decided it (a strategy that ran it, a failed
// agreement, a stall verdict): this rank's handle completes or fails, a success is remembered
// in the response cache, and the name is free for the next submission. The entry itself is
// marked finished and leaves the table after the cycle.
#pragma once

#include "negotiator.hpp"
#include "tensor_queue.hpp"
#include "tensor_table.hpp"

#include <riseml/collective_error.hpp>

#include <memory>
#include <optional>
#include <vector>

namespace riseml::engine {

class Finisher {
 public:
  Finisher(int rank, TensorQueue& queue, Negotiator& negotiator)
      : rank_(rank), queue_(queue), negotiator_(negotiator) {}

  void finish(TableEntry& entry, const std::optional<CollectiveError>& error = std::nullopt);
  // Each of a bucket that ran as one collective, as a success: every handle is settled before
  // any is woken, so that a caller waiting on them in turn wakes once.
  void finish_all(const std::vector<TableEntry*>& entries);
  // As a success, but this rank's handle is returned instead of completed (null if this rank
  // has none): device work, complete when the device gets there.
  std::shared_ptr<HandleState> finish_deferred(TableEntry& entry);

 private:
  // The bookkeeping of both: this rank's handle, out of the queue.
  std::shared_ptr<HandleState> end_entry(TableEntry& entry, bool failed);

  int rank_;
  TensorQueue& queue_;
  Negotiator& negotiator_;
  std::vector<std::shared_ptr<HandleState>> handles_;  // finish_all's, kept for its capacity
};

}  // namespace riseml::engine
