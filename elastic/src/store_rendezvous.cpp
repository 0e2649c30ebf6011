#include <riseml/elastic/store_rendezvous.hpp>

#include "store_protocol.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace riseml::elastic {

StoreRendezvous::StoreRendezvous(std::shared_ptr<StoreClient> client, int rank, int size,
                                 std::vector<std::byte> secret,
                                 std::chrono::milliseconds first_fence_wait)
    : client_(std::move(client)), rank_(rank), size_(size), secret_(std::move(secret)),
      first_fence_wait_(first_fence_wait) {}

namespace {
std::string value_key(int rank, std::string_view key) {
  return "v/" + std::to_string(rank) + "/" + std::string(key);
}
}  // namespace

void StoreRendezvous::put(std::string_view key, const std::vector<std::byte>& value) {
  client_->put(value_key(rank_, key),
               std::string(reinterpret_cast<const char*>(value.data()), value.size()));
}

void StoreRendezvous::fence(std::chrono::milliseconds timeout) {
  std::vector<int> all(static_cast<std::size_t>(size_));
  std::iota(all.begin(), all.end(), 0);
  fence_among(all, timeout);
}

void StoreRendezvous::fence_among(const std::vector<int>& ranks, std::chrono::milliseconds timeout) {
  if (!std::is_sorted(ranks.begin(), ranks.end()) ||
      !std::binary_search(ranks.begin(), ranks.end(), rank_))
    throw RendezvousError("elastic rendezvous: a fence among ranks " + protocol::format_ranks(ranks) +
                          " that are not sorted or leave out this rank (" + std::to_string(rank_) + ")");
  const long long number = fences_[ranks]++;
  timeout = std::max(timeout, std::exchange(first_fence_wait_, std::chrono::milliseconds(0)));
  const std::string name = "f/" + protocol::format_ranks(ranks) + "/" + std::to_string(number);
  const std::vector<int> missing = client_->fence(name, ranks, rank_, timeout);
  if (!missing.empty())
    throw RendezvousError("elastic rendezvous: rank(s) " + protocol::format_ranks(missing) +
                          " did not reach the fence within " + std::to_string(timeout.count()) +
                          " ms (the store of riseml-elastic at " + client_->address() + ")");
}

std::vector<std::byte> StoreRendezvous::get(int rank, std::string_view key,
                                            std::chrono::milliseconds) {
  const auto value = client_->get(value_key(rank, key));
  if (!value)
    throw RendezvousError("elastic rendezvous: rank " + std::to_string(rank) + " put no '" +
                          std::string(key) + "'");
  const auto* bytes = reinterpret_cast<const std::byte*>(value->data());
  return std::vector<std::byte>(bytes, bytes + value->size());
}

}  // namespace riseml::elastic
