#include <riseml/in_memory_rendezvous.hpp>

namespace riseml {

InMemoryRendezvousHub::InMemoryRendezvousHub(int size, std::vector<std::byte> secret)
    : size_(size), secret_(std::move(secret)) {
  if (secret_.empty())
    for (int i = 0; i < 32; ++i) secret_.push_back(static_cast<std::byte>(i * 37 + 11));
}

InMemoryRendezvous::InMemoryRendezvous(std::shared_ptr<InMemoryRendezvousHub> hub, int rank)
    : hub_(std::move(hub)), rank_(rank) {}

int InMemoryRendezvous::size() const { return hub_->size_; }

void InMemoryRendezvous::put(std::string_view key, const std::vector<std::byte>& value) {
  std::lock_guard lock(hub_->mutex_);
  hub_->staged_[{rank_, std::string(key)}] = value;
}

void InMemoryRendezvous::fence(std::chrono::milliseconds timeout) {
  std::unique_lock lock(hub_->mutex_);
  const auto generation = hub_->generation_;
  if (++hub_->arrived_ == hub_->size_) {
    for (auto& [k, v] : hub_->staged_) hub_->visible_[k] = v;
    hub_->staged_.clear();
    hub_->arrived_ = 0;
    ++hub_->generation_;
    hub_->changed_.notify_all();
    return;
  }
  if (!hub_->changed_.wait_for(lock, timeout, [&] { return hub_->generation_ != generation; })) {
    --hub_->arrived_;
    throw RendezvousError("in-memory fence: not every rank arrived in time");
  }
}

std::vector<std::byte> InMemoryRendezvous::get(int rank, std::string_view key,
                                               std::chrono::milliseconds) {
  std::lock_guard lock(hub_->mutex_);
  auto it = hub_->visible_.find({rank, std::string(key)});
  if (it == hub_->visible_.end())
    throw RendezvousError("in-memory rendezvous: rank " + std::to_string(rank) +
                          " published no " + std::string(key));
  return it->second;
}

std::vector<std::byte> InMemoryRendezvous::job_secret() { return hub_->secret_; }

}  // namespace riseml
