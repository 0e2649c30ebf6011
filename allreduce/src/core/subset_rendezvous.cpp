#include <riseml/subset_rendezvous.hpp>

#include <algorithm>
#include <string>

namespace riseml {

SubsetRendezvous::SubsetRendezvous(Rendezvous& parent, std::vector<int> ranks, Fences fences)
    : parent_(parent), ranks_(std::move(ranks)), fences_(fences) {
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    if (ranks_[i] < 0 || ranks_[i] >= parent.size())
      throw RendezvousError("process set rank " + std::to_string(ranks_[i]) +
                            " is not in the job (ranks 0.." + std::to_string(parent.size() - 1) +
                            ")");
    if (i && ranks_[i] <= ranks_[i - 1])
      throw RendezvousError("process set ranks must be sorted and distinct");
  }
  auto it = std::find(ranks_.begin(), ranks_.end(), parent.rank());
  if (it == ranks_.end())
    throw RendezvousError("rank " + std::to_string(parent.rank()) + " is not in the process set");
  index_ = static_cast<int>(it - ranks_.begin());
}

void SubsetRendezvous::put(std::string_view key, const std::vector<std::byte>& value) {
  parent_.put(key, value);
}

void SubsetRendezvous::fence(std::chrono::milliseconds timeout) {
  if (fences_ == Fences::members)
    parent_.fence_among(ranks_, timeout);
  else
    parent_.fence(timeout);
}

void SubsetRendezvous::fence_among(const std::vector<int>& ranks,
                                   std::chrono::milliseconds timeout) {
  std::vector<int> parents;
  for (int r : ranks) {
    if (r < 0 || r >= size())
      throw RendezvousError("fence_among: the process set has no rank " + std::to_string(r));
    parents.push_back(ranks_[static_cast<std::size_t>(r)]);
  }
  parent_.fence_among(parents, timeout);
}

std::vector<std::byte> SubsetRendezvous::get(int rank, std::string_view key,
                                             std::chrono::milliseconds timeout) {
  if (rank < 0 || rank >= size())
    throw RendezvousError("process set has no rank " + std::to_string(rank));
  return parent_.get(ranks_[static_cast<std::size_t>(rank)], key, timeout);
}

std::vector<std::byte> SubsetRendezvous::job_secret() { return parent_.job_secret(); }

}  // namespace riseml
