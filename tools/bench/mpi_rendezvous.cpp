#include "mpi_rendezvous.hpp"

#include <mpi.h>
#include <openssl/rand.h>

#include <cstring>

namespace riseml::bench {

MpiRendezvous::MpiRendezvous() {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  secret_.resize(32);
  if (rank_ == 0 && RAND_bytes(reinterpret_cast<unsigned char*>(secret_.data()), 32) != 1)
    throw RendezvousError("RAND_bytes failed");
  MPI_Bcast(secret_.data(), 32, MPI_BYTE, 0, MPI_COMM_WORLD);
}

void MpiRendezvous::put(std::string_view key, const std::vector<std::byte>& value) {
  staged_[std::string(key)] = value;
}

void MpiRendezvous::fence(std::chrono::milliseconds) {
  // Serialise as (key length, key, value length, value)*.
  std::vector<char> mine;
  auto append = [&](const void* p, std::size_t n) {
    const auto* c = static_cast<const char*>(p);
    mine.insert(mine.end(), c, c + n);
  };
  for (auto& [k, v] : staged_) {
    const std::uint64_t kl = k.size(), vl = v.size();
    append(&kl, 8);
    append(k.data(), kl);
    append(&vl, 8);
    append(v.data(), vl);
  }
  staged_.clear();
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(size_)), offsets(static_cast<std::size_t>(size_));
  MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[static_cast<std::size_t>(r)] = total;
    total += lens[static_cast<std::size_t>(r)];
  }
  std::vector<char> all(static_cast<std::size_t>(total) + 1);
  MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR,
                 MPI_COMM_WORLD);
  for (int r = 0; r < size_; ++r) {
    std::size_t at = static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]);
    const std::size_t end = at + static_cast<std::size_t>(lens[static_cast<std::size_t>(r)]);
    while (at < end) {
      std::uint64_t kl, vl;
      std::memcpy(&kl, &all[at], 8);
      std::string k(&all[at + 8], kl);
      std::memcpy(&vl, &all[at + 8 + kl], 8);
      std::vector<std::byte> v(vl);
      std::memcpy(v.data(), &all[at + 16 + kl], vl);
      visible_[{r, k}] = std::move(v);
      at += 16 + kl + vl;
    }
  }
}

std::vector<std::byte> MpiRendezvous::get(int rank, std::string_view key, std::chrono::milliseconds) {
  auto it = visible_.find({rank, std::string(key)});
  if (it == visible_.end())
    throw RendezvousError("rank " + std::to_string(rank) + " published no " + std::string(key));
  return it->second;
}

}  // namespace riseml::bench
