// The rules a table entry is judged by before it runs, as pure functions of the entry (and of
// which ranks have joined): whether it is ready, whether it may run at all while ranks have
// joined, and whether the ranks agree on what it is. Every rank holds the same table, so every
// rank reaches the same verdict and fails the entry with the same message and culprit rank.
#pragma once

#include "tensor_table.hpp"

#include <riseml/collective_error.hpp>

#include <optional>
#include <vector>

namespace riseml::engine {

// Every rank has sent its metadata or has joined.
bool is_ready(const TableEntry& entry, const std::vector<bool>& joined);

// Horovod's rule: only allreduces (and barriers) go on while a rank has joined. The error names
// the joined ranks that did not submit the entry (culprit: the first of them).
std::optional<CollectiveError> check_join_rule(const TableEntry& entry,
                                               const std::vector<bool>& joined);

// The ranks that submitted agree on the operation, data type, memory, reduce operation and
// scale factors, root, tensor count and shapes (allgather, alltoall: all but the first
// dimension), checked in that order. The error names each value with the ranks that gave it
// (culprit: the first rank of the second group).
std::optional<CollectiveError> check_agreement(const TableEntry& entry);

// Whether one of `ranks` has submitted a collective other than a barrier that is pending in
// `table` (`barrier`, an entry of the table, is left out).
bool busy_elsewhere(const TensorTable& table, const std::vector<int>& ranks,
                    const TableEntry& barrier);

}  // namespace riseml::engine
