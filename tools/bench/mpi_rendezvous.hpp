// The rendezvous over MPI, for runs under mpirun: puts are exchanged at each fence with an
// allgather, and rank 0 draws the job secret and broadcasts it.
#pragma once

#include <riseml/rendezvous.hpp>

#include <map>
#include <string>

namespace riseml::bench {

class MpiRendezvous : public Rendezvous {
 public:
  MpiRendezvous();  // MPI must be initialised
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void put(std::string_view key, const std::vector<std::byte>& value) override;
  void fence(std::chrono::milliseconds timeout) override;
  std::vector<std::byte> get(int rank, std::string_view key, std::chrono::milliseconds) override;
  std::vector<std::byte> job_secret() override { return secret_; }

 private:
  int rank_ = 0, size_ = 1;
  std::map<std::string, std::vector<std::byte>> staged_;
  std::map<std::pair<int, std::string>, std::vector<std::byte>> visible_;
  std::vector<std::byte> secret_;
};

}  // namespace riseml::bench
