// A rendezvous for ranks that are threads of one process: unit tests, and single-process use.
// Create one hub per job and one InMemoryRendezvous per rank.
#pragma once

#include <riseml/rendezvous.hpp>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

namespace riseml {

class InMemoryRendezvousHub {
 public:
  explicit InMemoryRendezvousHub(int size, std::vector<std::byte> secret = {});

 private:
  friend class InMemoryRendezvous;
  int size_;
  std::vector<std::byte> secret_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::pair<int, std::string>, std::vector<std::byte>> staged_, visible_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
};

class InMemoryRendezvous : public Rendezvous {
 public:
  InMemoryRendezvous(std::shared_ptr<InMemoryRendezvousHub> hub, int rank);

  int rank() const override { return rank_; }
  int size() const override;
  void put(std::string_view key, const std::vector<std::byte>& value) override;
  void fence(std::chrono::milliseconds timeout) override;
  std::vector<std::byte> get(int rank, std::string_view key,
                             std::chrono::milliseconds timeout) override;
  std::vector<std::byte> job_secret() override;

 private:
  std::shared_ptr<InMemoryRendezvousHub> hub_;
  int rank_;
};

}  // namespace riseml
