// The shared-memory transport between two ranks of one host. This rank writes into its own
// segment's channel for the peer and reads from the peer's segment's channel for it: one copy
// in on the sending side, and the receiver reduces (or copies) straight out of the slot, with
// no copy through the kernel. Slots are released one by one, so sending, copying and reducing
// overlap across a message.
#pragma once

#include <memory>
#include <string>

#include "link.hpp"
#include "shm_segment.hpp"

namespace riseml {

class ShmLink : public Link {
 public:
  // `mine`: this rank's segment, `theirs`: the peer's (both stay mapped while the link lives);
  // `my_channel`/`their_channel`: the channel index for the peer in mine, for me in theirs.
  ShmLink(std::shared_ptr<ShmSegment> mine, std::uint32_t my_channel,
          std::shared_ptr<ShmSegment> theirs, std::uint32_t their_channel, int peer,
          std::string peer_name);
  ~ShmLink() override;

  const char* kind() const override { return "shm"; }
  void begin_send(const CallTag& tag, const std::byte* data, std::size_t bytes) override;
  bool progress_send(bool& moved, std::size_t ready) override;
  void begin_recv(const CallTag& tag, std::size_t bytes, std::byte* direct,
                  SegmentSink sink) override;
  bool progress_recv(bool& moved) override;
  std::size_t received_bytes() const override;
  int wait_fd(bool, short*) const override { return -1; }
  std::size_t send_capacity() const override { return slots_ * slot_bytes_; }
  Doorbell* doorbell() const override { return &mine_->header().doorbell; }
  bool has_incoming() override;
  void check_peer() override;
  void check_pending(const CallTag& current) override;
  void abort(const std::string& reason, int culprit) noexcept override;
  std::optional<PeerWait> peer_wait() const override;

 private:
  void throw_if_peer_aborted();

  std::shared_ptr<ShmSegment> mine_, theirs_;
  std::uint32_t my_channel_, their_channel_;
  int peer_;
  std::string peer_name_;
  int peer_pidfd_ = -1;
  std::uint64_t slots_;
  std::uint64_t slot_bytes_;

  CallTag send_tag_{};
  const std::byte* send_data_ = nullptr;
  std::size_t send_bytes_ = 0, sent_ = 0;
  bool send_started_ = false;
  std::uint64_t produced_ = 0;  // my copy of my channel's produced counter

  CallTag recv_tag_{};
  std::size_t recv_bytes_ = 0, received_ = 0;
  bool recv_started_ = false;
  std::byte* recv_direct_ = nullptr;
  SegmentSink recv_sink_{};
  std::uint64_t consumed_ = 0;  // my copy of the peer channel's consumed counter
};

}  // namespace riseml
