#include "shm_link.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "link_errors.hpp"

namespace riseml {

ShmLink::ShmLink(std::shared_ptr<ShmSegment> mine, std::uint32_t my_channel,
                 std::shared_ptr<ShmSegment> theirs, std::uint32_t their_channel, int peer,
                 std::string peer_name)
    : mine_(std::move(mine)),
      theirs_(std::move(theirs)),
      my_channel_(my_channel),
      their_channel_(their_channel),
      peer_(peer),
      peer_name_(std::move(peer_name)) {
  slots_ = mine_->header().layout.slots;
  slot_bytes_ = mine_->header().layout.slot_bytes;
  const int pid = theirs_->header().owner_pid;
  // A pidfd becomes readable when the process exits, zombie or not; kill(pid, 0) is the
  // fallback on kernels without pidfd_open.
  if (pid != ::getpid()) peer_pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  produced_ = mine_->control(my_channel_).produced.load(std::memory_order_relaxed);
  consumed_ = theirs_->control(their_channel_).consumed.load(std::memory_order_relaxed);
}

ShmLink::~ShmLink() {
  if (peer_pidfd_ >= 0) ::close(peer_pidfd_);
}

void ShmLink::begin_send(const CallTag& tag, const std::byte* data, std::size_t bytes) {
  send_tag_ = tag;
  send_data_ = data;
  send_bytes_ = bytes;
  sent_ = 0;
  send_started_ = false;
}

bool ShmLink::progress_send(bool& moved, std::size_t ready) {
  ShmChannelControl& ctl = mine_->control(my_channel_);
  bool published = false;
  auto done = [&](bool all) {
    if (published) theirs_->header().doorbell.ring();  // the peer may sleep waiting for it
    return all;
  };
  while (!send_started_ || sent_ < send_bytes_) {
    const std::uint64_t consumed = ctl.consumed.load(std::memory_order_acquire);
    if (produced_ - consumed >= slots_) {
      throw_if_peer_aborted();
      return done(false);
    }
    const std::size_t len = std::min<std::size_t>(slot_bytes_, send_bytes_ - sent_);
    if (sent_ + len > ready) return done(false);  // the producer has not got that far yet
    ShmSlotHeader& h = mine_->slot(my_channel_, produced_);
    h.tag = send_tag_;
    h.message_bytes = send_bytes_;
    h.offset = sent_;
    h.len = len;
    if (len) std::memcpy(mine_->slot_data(my_channel_, produced_), send_data_ + sent_, len);
    ++produced_;
    ctl.produced.store(produced_, std::memory_order_release);
    sent_ += len;
    send_started_ = true;
    moved = published = true;
  }
  return done(true);
}

void ShmLink::begin_recv(const CallTag& tag, std::size_t bytes, std::byte* direct,
                         SegmentSink sink) {
  recv_tag_ = tag;
  recv_bytes_ = bytes;
  received_ = 0;
  recv_started_ = false;
  recv_direct_ = direct;
  recv_sink_ = sink;
}

bool ShmLink::progress_recv(bool& moved) {
  ShmChannelControl& ctl = theirs_->control(their_channel_);
  bool released = false;
  auto done = [&](bool all) {
    if (released) theirs_->header().doorbell.ring();  // the peer may sleep waiting for room
    return all;
  };
  while (!recv_started_ || received_ < recv_bytes_) {
    const std::uint64_t produced = ctl.produced.load(std::memory_order_acquire);
    if (produced == consumed_) {
      throw_if_peer_aborted();
      return done(false);
    }
    const ShmSlotHeader& h = theirs_->slot(their_channel_, consumed_);
    if (!(h.tag == recv_tag_)) throw_tag_mismatch(peer_name_, peer_, h.tag, recv_tag_);
    if (h.message_bytes != recv_bytes_)
      throw_size_mismatch(peer_name_, peer_, h.message_bytes, recv_bytes_, recv_tag_);
    if (h.offset != received_ || h.len > recv_bytes_ - received_)
      throw CollectiveError(ErrorKind::peer_failed,
                            peer_name_ + " wrote a corrupt shared-memory slot", peer_);
    const std::byte* data = theirs_->slot_data(their_channel_, consumed_);
    if (recv_direct_ && h.len) std::memcpy(recv_direct_ + h.offset, data, h.len);
    if (recv_sink_ && h.len) recv_sink_(data, h.offset, h.len);
    received_ += h.len;
    ++consumed_;
    ctl.consumed.store(consumed_, std::memory_order_release);
    recv_started_ = true;
    moved = released = true;
  }
  return done(true);
}

std::size_t ShmLink::received_bytes() const { return received_; }

bool ShmLink::has_incoming() {
  return theirs_->control(their_channel_).produced.load(std::memory_order_acquire) != consumed_ ||
         theirs_->header().aborted.load(std::memory_order_acquire) != 0;
}

void ShmLink::throw_if_peer_aborted() {
  const ShmSegmentHeader& h = theirs_->header();
  if (h.aborted.load(std::memory_order_acquire) != 0) {
    std::string reason(h.reason, strnlen(h.reason, sizeof h.reason));
    throw_peer_aborted(peer_name_, peer_, reason,
                       culprit_from_wire(h.culprit.load(std::memory_order_relaxed), world_size_));
  }
}

void ShmLink::check_peer() {
  throw_if_peer_aborted();
  bool dead = false;
  if (peer_pidfd_ >= 0) {
    pollfd p{peer_pidfd_, POLLIN, 0};
    dead = ::poll(&p, 1, 0) > 0;
  } else {
    const int pid = theirs_->header().owner_pid;
    dead = pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
  }
  if (dead)
    throw CollectiveError(ErrorKind::peer_failed,
                          peer_name_ + " died (process " +
                              std::to_string(theirs_->header().owner_pid) + " exited)",
                          peer_);
}

void ShmLink::check_pending(const CallTag& current) {
  // Only the oldest unread slot is safe to look at: the sender may be reusing the others.
  if (recv_started_ && received_ < recv_bytes_) return;  // mid-message: that slot is ours
  const std::uint64_t produced =
      theirs_->control(their_channel_).produced.load(std::memory_order_acquire);
  if (produced == consumed_) return;
  const CallTag tag = theirs_->slot(their_channel_, consumed_).tag;
  if (tag.sequence == current.sequence && !(tag == current))
    throw_tag_mismatch(peer_name_, peer_, tag, current);
}

void ShmLink::abort(const std::string& reason, int culprit) noexcept {
  ShmSegmentHeader& h = mine_->header();
  std::uint32_t expected = 0;
  // The first abort wins; the reason is written before the flag is published.
  if (h.aborted.load(std::memory_order_relaxed) != 0) return;
  const std::size_t n = std::min(reason.size(), sizeof h.reason - 1);
  std::memcpy(h.reason, reason.data(), n);
  h.reason[n] = '\0';
  h.culprit.store(culprit + 1, std::memory_order_relaxed);
  h.aborted.compare_exchange_strong(expected, 1, std::memory_order_release);
  theirs_->header().doorbell.ring();
}

std::optional<PeerWait> ShmLink::peer_wait() const {
  const ShmSegmentHeader& h = theirs_->header();
  PeerWait w;
  w.waiting_on = h.waiting_on.load(std::memory_order_relaxed) - 1;
  w.said_at = std::chrono::steady_clock::time_point(
      std::chrono::nanoseconds(h.waiting_heartbeat_ns.load(std::memory_order_acquire)));
  if (w.waiting_on < -1 || w.waiting_on >= world_size_) w.waiting_on = -1;
  return w;
}

}  // namespace riseml
