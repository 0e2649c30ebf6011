// The one small interface every transport implements: a connection to one peer that carries
// whole messages in order, each way. Sending and receiving are started and then progressed by
// the caller (see exchange.hpp), so one thread can send and receive at once on any mix of
// transports without threads of its own. A received message is handed over in segments as it
// arrives, so the caller reduces one segment while the next is still on its way; transports
// that can hand out their own buffer (shared memory) let it be reduced in place.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "call_tag.hpp"
#include "function_ref.hpp"

namespace riseml {

// Called with each received segment: its bytes and where they sit in the message.
using SegmentSink = FunctionRef<void(const std::byte* data, std::size_t offset, std::size_t len)>;

// What a waiting peer last said of itself (see Link::peer_wait).
struct PeerWait {
  int waiting_on = -1;  // the rank it waits on; -1: it has not waited yet
  std::chrono::steady_clock::time_point said_at{};
};

class Link {
 public:
  virtual ~Link() = default;

  virtual const char* kind() const = 0;

  // Starts sending `bytes` bytes of `data` (which must stay valid until progress_send() returns
  // true). One message at a time.
  virtual void begin_send(const CallTag& tag, const std::byte* data, std::size_t bytes) = 0;
  // Moves what it can without blocking (sets `moved` when it moved anything) of the first
  // `ready` bytes (the rest is still being produced); true once the message is handed over
  // completely. Throws CollectiveError.
  virtual bool progress_send(bool& moved, std::size_t ready) = 0;

  // Starts receiving a message of exactly `bytes` bytes tagged `tag` (a different size or tag
  // is a mismatch error). Each segment is copied to direct + offset when `direct` is set, then
  // given to `sink` when set.
  virtual void begin_recv(const CallTag& tag, std::size_t bytes, std::byte* direct,
                          SegmentSink sink) = 0;
  virtual bool progress_recv(bool& moved) = 0;
  // Bytes of the current receive already written to `direct` / given to the sink.
  virtual std::size_t received_bytes() const = 0;

  // For waiting: a file descriptor that becomes ready when the send (or receive) side can
  // progress, with the poll events to wait for; -1 when the link must be polled by calling
  // progress; kNothingToWaitFor when that side cannot move until this rank itself produces
  // more (a send gated on a receive).
  static constexpr int kNothingToWaitFor = -2;
  virtual int wait_fd(bool sending, short* events) const = 0;

  // How many bytes a send hands over completely while the peer reads nothing (once the peer has
  // read what was sent before): shared memory's slots. 0: nothing is promised (sockets).
  virtual std::size_t send_capacity() const { return 0; }

  // The doorbell this rank may sleep on until the peer moves on this link (shared memory), or
  // null (see doorbell.hpp).
  virtual struct Doorbell* doorbell() const { return nullptr; }

  // Between calls: whether the peer has already sent something this rank has not read (the
  // start of the next collective), and a file descriptor that becomes readable when it does
  // (-1: none; shared memory rings the doorbell instead).
  virtual bool has_incoming() = 0;
  virtual int incoming_fd() const { return -1; }

  // Throws CollectiveError(peer_failed) when the peer is known to be gone. Cheap enough to call
  // every few milliseconds while waiting.
  virtual void check_peer() = 0;

  // Throws CollectiveError(mismatch) when the peer has already sent a message that belongs to
  // the call `current` is (same sequence number) but differs from it: a peer running another
  // collective or algorithm may never send what this rank waits for, so the mismatch has to be
  // found among messages nobody asked for yet. Transports that cannot peek do nothing.
  virtual void check_pending(const CallTag& current) { (void)current; }

  // Best effort, never blocks long, never throws: tells the peer this rank failed and why, so
  // the peer's error can name the original cause.
  // `culprit`: the rank this rank blames (-1: none known; the peer then blames this rank).
  virtual void abort(const std::string& reason, int culprit) noexcept = 0;
  // Whom the peer waits on, where this transport can see it without the peer's help (shared
  // memory: the peer's own record). Empty where it cannot.
  virtual std::optional<PeerWait> peer_wait() const { return std::nullopt; }

  // The number of ranks, for checking a culprit a peer names (set once the links exist).
  void set_world_size(int n) { world_size_ = n; }

 protected:
  int world_size_ = 0;
};

}  // namespace riseml
