#include "process_set_agreement.hpp"

#include "process_set.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

namespace riseml::runtime {

namespace {

CollectiveError invalid(const std::string& what) {
  return CollectiveError(ErrorKind::invalid_argument, what);
}

}  // namespace

std::vector<int> checked_process_set_ranks(std::vector<int> ranks, int size) {
  std::sort(ranks.begin(), ranks.end());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size)
      throw invalid("riseml: process set rank " + std::to_string(ranks[i]) +
                    " is not in the job (ranks 0.." + std::to_string(size - 1) + ")");
    if (i && ranks[i] == ranks[i - 1])
      throw invalid("riseml: process set rank " + std::to_string(ranks[i]) + " given twice");
  }
  if (ranks.empty()) throw invalid("riseml: a process set needs at least one rank");
  return ranks;
}

void check_every_rank_agrees(engine::Engine& job, int rank, int id, const std::vector<int>& ranks) {
  const int size = job.size();
  // Every rank's list, padded to the job size with -1.
  std::vector<std::int64_t> mine(static_cast<std::size_t>(size), -1);
  std::copy(ranks.begin(), ranks.end(), mine.begin());
  engine::Handle h = job.allgather("riseml.process_set.add." + std::to_string(id), mine.data(),
                                   {1, size}, DataType::int64);
  const auto& all = h.allgather_output();
  const std::size_t row_bytes = mine.size() * sizeof(std::int64_t);
  for (int r = 0; r < size; ++r) {
    if (std::memcmp(all.data() + static_cast<std::size_t>(r) * row_bytes, mine.data(), row_bytes) != 0)
      throw invalid("riseml: add_process_set(" + rank_list(ranks) + ") on rank " +
                    std::to_string(rank) + ", but rank " + std::to_string(r) +
                    " asked for other ranks; every rank must add the same process sets in the "
                    "same order");
  }
}

}  // namespace riseml::runtime
