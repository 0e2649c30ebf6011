#include <riseml/pmix/session_rendezvous.hpp>

#include <stdexcept>

namespace riseml::pmix {

SessionRendezvous::SessionRendezvous(std::shared_ptr<Session> session)
    : session_(std::move(session)) {
  if (!session_) throw std::invalid_argument("SessionRendezvous needs a session");
}

int SessionRendezvous::rank() const {
  return session_->facts().rank;
}

int SessionRendezvous::size() const {
  return session_->facts().size;
}

void SessionRendezvous::put(std::string_view key, const std::vector<std::byte>& value) {
  session_->put(key, value);
}

void SessionRendezvous::fence(std::chrono::milliseconds timeout) {
  session_->commit();
  session_->fence(timeout);
}

void SessionRendezvous::fence_among(const std::vector<int>& ranks,
                                    std::chrono::milliseconds timeout) {
  session_->commit();
  session_->fence_among(ranks, timeout);
}

std::vector<std::byte> SessionRendezvous::get(int rank, std::string_view key,
                                              std::chrono::milliseconds) {
  return session_->get(rank, key, std::chrono::milliseconds(0));
}

std::vector<std::byte> SessionRendezvous::job_secret() {
  return session_->job_secret();
}

}  // namespace riseml::pmix
