#include "store_mailbox.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace riseml::torch_distributed {

StoreMailbox::StoreMailbox(c10::intrusive_ptr<c10d::Store> store, std::string prefix, int rank,
                           int size, std::chrono::milliseconds timeout,
                           const std::atomic<bool>& closing)
    : store_(std::move(store)),
      prefix_(std::move(prefix)),
      rank_(rank),
      size_(size),
      timeout_(timeout),
      closing_(closing) {}

std::string StoreMailbox::key(bool sending, std::string_view space, int src, int dst, int tag,
                              bool advance) {
  std::lock_guard lock(mutex_);
  // Sent and received messages are numbered apart: to itself, a rank is both ends of one pair.
  auto& numbers = sending ? sent_ : received_;
  std::uint64_t& next = numbers[{std::string(space), src, dst, tag}];
  const std::uint64_t n = advance ? next++ : next;
  return prefix_ + std::string(space) + std::to_string(src) + "/" + std::to_string(dst) + "/" +
         std::to_string(tag) + "/" + std::to_string(n);
}

void StoreMailbox::post(std::string_view space, int dst, int tag, const void* data,
                        std::size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  const std::vector<uint8_t> payload(p, p + bytes);
  store_->set(key(/*sending=*/true, space, rank_, dst, tag, /*advance=*/true), payload);
}

int StoreMailbox::take(std::string_view operation, std::string_view space, int src, int tag,
                       void* data, std::size_t bytes) {
  const std::string op(operation);
  const std::string from = src < 0 ? "any rank" : "rank " + std::to_string(src);
  auto closed = [&] {
    return std::runtime_error("riseml " + op + ": the process group was destroyed while " +
                              from + " had not sent");
  };
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  auto pause = std::chrono::microseconds(50);
  int found = -1;
  std::string k;
  while (found < 0) {
    if (closing_) throw closed();
    for (int r = 0; r < size_ && found < 0; ++r) {
      // Any rank: another one (torch's irecv to itself names itself as the source).
      if (src >= 0 ? r != src : r == rank_) continue;
      k = key(/*sending=*/false, space, r, rank_, tag, /*advance=*/false);
      try {
        if (store_->check({k})) found = r;
      } catch (const std::exception& e) {
        // While the group goes, the store may go first (its host rank exited).
        if (closing_) throw closed();
        throw std::runtime_error("riseml " + op + " from " + from + ": the store failed (" +
                                 e.what() + "); did the rank that hosts it exit?");
      }
    }
    if (found >= 0) break;
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("riseml " + op + ": " + from + " sent nothing with tag " +
                               std::to_string(tag) + " within " +
                               std::to_string(timeout_.count()) + " ms");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
  key(/*sending=*/false, space, found, rank_, tag, /*advance=*/true);
  const std::vector<uint8_t> payload = store_->get(k);
  store_->deleteKey(k);
  if (payload.size() != bytes)
    throw std::runtime_error("riseml " + op + ": rank " + std::to_string(found) + " sent " +
                             std::to_string(payload.size()) + " bytes, this rank expected " +
                             std::to_string(bytes));
  if (bytes) std::memcpy(data, payload.data(), bytes);
  return found;
}

}  // namespace riseml::torch_distributed
