// A rendezvous for a subset of a job's ranks (a process set), served by the job's own
// rendezvous: no new bootstrap. Member i of the subset is job rank ranks[i]; keys are the
// parent's, so give the sub-communicator its own CommunicatorOptions::rendezvous_prefix.
// The parent's fences are job-wide: while the members build a Communicator over this
// rendezvous, every other rank of the job calls Communicator::stand_by on the parent. With
// Fences::members, the members fence among themselves (the parent's fence_among): the world of
// the survivors of a job, where the other ranks are gone.
#pragma once

#include <riseml/rendezvous.hpp>

#include <vector>

namespace riseml {

class SubsetRendezvous : public Rendezvous {
 public:
  enum class Fences { whole_job, members };
  // `ranks`: sorted, distinct job ranks that include parent.rank(). Throws
  // RendezvousError otherwise. `parent` must outlive this object.
  SubsetRendezvous(Rendezvous& parent, std::vector<int> ranks, Fences fences = Fences::whole_job);

  int rank() const override { return index_; }
  int size() const override { return static_cast<int>(ranks_.size()); }
  void put(std::string_view key, const std::vector<std::byte>& value) override;
  void fence(std::chrono::milliseconds timeout) override;
  void fence_among(const std::vector<int>& ranks, std::chrono::milliseconds timeout) override;
  std::vector<std::byte> get(int rank, std::string_view key,
                             std::chrono::milliseconds timeout) override;
  std::vector<std::byte> job_secret() override;

  const std::vector<int>& ranks() const { return ranks_; }

 private:
  Rendezvous& parent_;
  std::vector<int> ranks_;
  Fences fences_;
  int index_ = -1;
};

}  // namespace riseml
