#include "store_rendezvous.hpp"

#include <sys/random.h>

#include <cstring>
#include <stdexcept>
#include <utility>

namespace riseml::torch_distributed {

namespace {

std::vector<uint8_t> to_store(const std::vector<std::byte>& v) {
  std::vector<uint8_t> out(v.size());
  if (!v.empty()) std::memcpy(out.data(), v.data(), v.size());
  return out;
}

std::vector<std::byte> from_store(const std::vector<uint8_t>& v) {
  std::vector<std::byte> out(v.size());
  if (!v.empty()) std::memcpy(out.data(), v.data(), v.size());
  return out;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

constexpr std::size_t kSecretBytes = 32;

}  // namespace

StoreRendezvous::StoreRendezvous(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                                 std::chrono::milliseconds timeout,
                                 std::optional<std::vector<std::byte>> secret)
    : store_(std::move(store)), rank_(rank), size_(size), timeout_(timeout),
      secret_(std::move(secret)) {
  // Members add one each: the first `size` additions are instance 0, the next instance 1, ...
  const int64_t ticket = store_->add("riseml/instances", 1);
  prefix_ = "riseml/" + std::to_string((ticket - 1) / size_) + "/";
}

std::string StoreRendezvous::key(std::string_view name) const {
  return prefix_ + std::string(name);
}

void StoreRendezvous::wait_for(const std::string& k, std::chrono::milliseconds timeout,
                               const char* what) {
  try {
    store_->wait({k}, timeout);
  } catch (const std::exception& e) {
    throw RendezvousError("rank " + std::to_string(rank_) + ": " + what + " (store key '" + k +
                          "') did not appear within " + std::to_string(timeout.count()) +
                          " ms: " + e.what());
  }
}

void StoreRendezvous::put(std::string_view k, const std::vector<std::byte>& value) {
  store_->set(key(std::to_string(rank_) + "/" + std::string(k)), to_store(value));
}

void StoreRendezvous::fence(std::chrono::milliseconds timeout) {
  const std::string base = key("fence/" + std::to_string(++fences_));
  store_->set(base + "/" + std::to_string(rank_), std::vector<uint8_t>{1});
  if (store_->add(base, 1) == size_) store_->set(base + "/done", std::vector<uint8_t>{1});
  try {
    store_->wait({base + "/done"}, timeout);
  } catch (const std::exception& e) {
    std::vector<int> missing;
    try {
      for (int r = 0; r < size_; ++r)
        if (!store_->check({base + "/" + std::to_string(r)})) missing.push_back(r);
    } catch (const std::exception&) {
      throw RendezvousError("rank " + std::to_string(rank_) +
                            ": the store went away during setup (" + e.what() +
                            "); is the process that serves it (usually rank 0) still alive?");
    }
    throw RendezvousError("rank " + std::to_string(rank_) + ": rank(s) " + rank_list(missing) +
                          " of the group did not arrive within " +
                          std::to_string(timeout.count()) +
                          " ms of setting up the riseml process group");
  }
}

std::vector<std::byte> StoreRendezvous::get(int rank, std::string_view k,
                                            std::chrono::milliseconds timeout) {
  const std::string full = key(std::to_string(rank) + "/" + std::string(k));
  wait_for(full, timeout, ("rank " + std::to_string(rank) + "'s setup data").c_str());
  return from_store(store_->get(full));
}

std::vector<std::byte> StoreRendezvous::job_secret() {
  if (secret_) return *secret_;
  const std::string k = key("secret");
  if (rank_ == 0) {
    std::vector<std::byte> drawn(kSecretBytes);
    std::size_t filled = 0;
    while (filled < drawn.size()) {
      const ssize_t n = ::getrandom(drawn.data() + filled, drawn.size() - filled, 0);
      if (n < 0 && errno != EINTR) throw RendezvousError("getrandom failed for the job secret");
      if (n > 0) filled += static_cast<std::size_t>(n);
    }
    store_->set(k, to_store(drawn));
    secret_ = std::move(drawn);
  } else {
    wait_for(k, timeout_, "rank 0's connection secret");
    secret_ = from_store(store_->get(k));
    if (secret_->size() != kSecretBytes)
      throw RendezvousError("rank " + std::to_string(rank_) + ": the store's key '" + k +
                            "' is not a riseml secret (" + std::to_string(secret_->size()) +
                            " bytes); is something else writing to this store?");
  }
  return *secret_;
}

std::vector<int> StoreRendezvous::monitored_arrival(std::uint64_t number,
                                                    std::chrono::milliseconds timeout,
                                                    bool wait_all_ranks) {
  const std::string base = key("monitored/" + std::to_string(number));
  std::vector<int> missing;
  if (rank_ != 0) {
    store_->set(base + "/" + std::to_string(rank_), std::vector<uint8_t>{1});
    wait_for(base + "/done", timeout, "rank 0's release from the monitored barrier");
    return missing;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int r = 1; r < size_; ++r) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    const std::string k = base + "/" + std::to_string(r);
    if (left.count() <= 0 && !store_->check({k}))
      throw RendezvousError("Rank 0 timed out in monitoredBarrier after " +
                            std::to_string(timeout.count()) + " ms");
    try {
      store_->wait({k}, std::max(left, std::chrono::milliseconds(1)));
    } catch (const std::exception&) {
      missing.push_back(r);
      if (!wait_all_ranks) break;
    }
  }
  if (missing.empty()) store_->set(base + "/done", std::vector<uint8_t>{1});
  return missing;
}

}  // namespace riseml::torch_distributed
