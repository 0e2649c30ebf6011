#include "inproc_link.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "link_errors.hpp"

namespace riseml {

namespace {
// Segments are handed to the sink in pieces this big, so the algorithms' offset handling is
// exercised by the unit tests just as shared memory and TCP exercise it.
constexpr std::size_t kSegmentBytes = 4096;
}  // namespace

InprocFabric::InprocFabric(int size) : size_(size) {
  mailboxes_.resize(static_cast<std::size_t>(size) * static_cast<std::size_t>(size));
  for (auto& m : mailboxes_) m = std::make_unique<Mailbox>();
  for (int r = 0; r < size; ++r) wakeups_.push_back(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
}

InprocFabric::~InprocFabric() {
  for (int fd : wakeups_)
    if (fd >= 0) ::close(fd);
}

void InprocFabric::wake(int rank) const {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wakeup_fd(rank), &one, sizeof one);
}

void InprocFabric::drain(int rank) const {
  std::uint64_t value;
  [[maybe_unused]] const auto n = ::read(wakeup_fd(rank), &value, sizeof value);
}

int InprocLink::wait_fd(bool sending, short* events) const {
  if (sending) return kNothingToWaitFor;  // sends never block; a pending one waits on us
  *events = POLLIN;
  return fabric_->wakeup_fd(self_);
}

InprocLink::InprocLink(std::shared_ptr<InprocFabric> fabric, int self, int peer,
                       std::string peer_name)
    : fabric_(std::move(fabric)), self_(self), peer_(peer), peer_name_(std::move(peer_name)) {}

void InprocLink::begin_send(const CallTag& tag, const std::byte* data, std::size_t bytes) {
  send_tag_ = tag;
  send_data_ = data;
  send_bytes_ = bytes;
}

bool InprocLink::progress_send(bool& moved, std::size_t ready) {
  if (ready < send_bytes_) return false;  // whole messages only
  InprocFabric::Message m;
  m.tag = send_tag_;
  m.payload.assign(send_data_, send_data_ + send_bytes_);
  {
    auto& box = fabric_->mailbox(self_, peer_);
    std::lock_guard lock(box.mutex);
    box.queue.push_back(std::move(m));
  }
  fabric_->wake(peer_);
  moved = true;
  return true;
}

void InprocLink::begin_recv(const CallTag& tag, std::size_t bytes, std::byte* direct,
                            SegmentSink sink) {
  recv_tag_ = tag;
  recv_bytes_ = bytes;
  recv_direct_ = direct;
  recv_sink_ = sink;
  received_ = 0;
}

std::size_t InprocLink::received_bytes() const { return received_; }

bool InprocLink::has_incoming() {
  auto& box = fabric_->mailbox(peer_, self_);
  std::lock_guard lock(box.mutex);
  return !box.queue.empty();
}

bool InprocLink::progress_recv(bool& moved) {
  InprocFabric::Message m;
  fabric_->drain(self_);  // before looking: a message queued after this wakes the next poll
  {
    auto& box = fabric_->mailbox(peer_, self_);
    std::lock_guard lock(box.mutex);
    if (box.queue.empty()) return false;
    m = std::move(box.queue.front());
    box.queue.pop_front();
  }
  moved = true;
  if (m.abort) throw_peer_aborted(peer_name_, peer_, m.reason, culprit_from_wire(m.culprit + 1, world_size_));
  if (!(m.tag == recv_tag_)) throw_tag_mismatch(peer_name_, peer_, m.tag, recv_tag_);
  if (m.payload.size() != recv_bytes_)
    throw_size_mismatch(peer_name_, peer_, m.payload.size(), recv_bytes_, recv_tag_);
  for (std::size_t off = 0; off < recv_bytes_; off += kSegmentBytes) {
    const std::size_t len = std::min(kSegmentBytes, recv_bytes_ - off);
    if (recv_direct_) std::memcpy(recv_direct_ + off, m.payload.data() + off, len);
    if (recv_sink_) recv_sink_(m.payload.data() + off, off, len);
  }
  received_ = recv_bytes_;
  return true;
}

void InprocLink::check_pending(const CallTag& current) {
  auto& box = fabric_->mailbox(peer_, self_);
  std::lock_guard lock(box.mutex);
  for (const auto& m : box.queue)
    if (!m.abort && m.tag.sequence == current.sequence && !(m.tag == current))
      throw_tag_mismatch(peer_name_, peer_, m.tag, current);
}

void InprocLink::abort(const std::string& reason, int culprit) noexcept {
  try {
    InprocFabric::Message m;
    m.abort = true;
    m.reason = reason;
    m.culprit = culprit;
    {
      auto& box = fabric_->mailbox(self_, peer_);
      std::lock_guard lock(box.mutex);
      box.queue.push_back(std::move(m));
    }
    fabric_->wake(peer_);
  } catch (...) {
  }
}

}  // namespace riseml
