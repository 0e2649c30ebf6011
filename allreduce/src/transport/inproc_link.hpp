// The in-process transport: ranks are threads of one process and messages go through
// mutex-protected mailboxes. For unit tests of the algorithms (any number of ranks, no
// sockets, no shared memory); it allocates per message and is not meant to be fast.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "link.hpp"

namespace riseml {

class InprocFabric {
 public:
  explicit InprocFabric(int size);
  ~InprocFabric();

  // Each rank's wake-up eventfd: written after a message is queued for it, so a waiting rank
  // sleeps in poll() instead of spinning (tests run many more ranks than cores).
  int wakeup_fd(int rank) const { return wakeups_[static_cast<std::size_t>(rank)]; }
  void wake(int rank) const;
  void drain(int rank) const;

  struct Message {
    CallTag tag{};
    std::vector<std::byte> payload;
    bool abort = false;
    std::string reason;
    int culprit = -1;
  };
  struct Mailbox {
    std::mutex mutex;
    std::deque<Message> queue;
  };
  Mailbox& mailbox(int from, int to) {
    return *mailboxes_[static_cast<std::size_t>(from * size_ + to)];
  }

 private:
  int size_;
  std::vector<std::unique_ptr<Mailbox>> mailboxes_;
  std::vector<int> wakeups_;
};

class InprocLink : public Link {
 public:
  InprocLink(std::shared_ptr<InprocFabric> fabric, int self, int peer, std::string peer_name);

  const char* kind() const override { return "inproc"; }
  void begin_send(const CallTag& tag, const std::byte* data, std::size_t bytes) override;
  bool progress_send(bool& moved, std::size_t ready) override;
  void begin_recv(const CallTag& tag, std::size_t bytes, std::byte* direct,
                  SegmentSink sink) override;
  bool progress_recv(bool& moved) override;
  std::size_t received_bytes() const override;
  int wait_fd(bool sending, short* events) const override;
  void check_peer() override {}
  bool has_incoming() override;
  int incoming_fd() const override { return fabric_->wakeup_fd(self_); }
  void check_pending(const CallTag& current) override;
  void abort(const std::string& reason, int culprit) noexcept override;

 private:
  std::shared_ptr<InprocFabric> fabric_;
  int self_, peer_;
  std::string peer_name_;
  CallTag send_tag_{};
  const std::byte* send_data_ = nullptr;
  std::size_t send_bytes_ = 0;
  CallTag recv_tag_{};
  std::size_t recv_bytes_ = 0;
  std::byte* recv_direct_ = nullptr;
  SegmentSink recv_sink_{};
  std::size_t received_ = 0;
};

}  // namespace riseml
