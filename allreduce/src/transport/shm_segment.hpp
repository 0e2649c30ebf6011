// A POSIX shared-memory segment that one rank creates for the messages it sends to the other
// ranks of its host: one single-producer single-consumer ring of slots per destination. The
// creator pre-faults every page (and the mappers map with MAP_POPULATE), so no first touch of a
// fresh page ever lands on the steady-state path. It is unlinked as soon as every peer has
// mapped it, so a crash leaves nothing behind in /dev/shm.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "call_tag.hpp"
#include "doorbell.hpp"

namespace riseml {

struct ShmLayout {
  std::uint32_t channels = 0;        // one per rank of the host (the own one unused)
  std::uint32_t slots = 8;           // per channel
  std::uint64_t slot_bytes = 128 << 10;

  std::size_t channel_bytes() const;
  std::size_t total_bytes() const;
};

struct ShmSegmentHeader {
  std::uint64_t magic;
  std::int32_t owner_rank;
  std::int32_t owner_pid;
  ShmLayout layout;
  unsigned char auth[32];             // HMAC(job secret, name): proves the creator knows it
  std::atomic<std::uint32_t> aborted; // set (last) when the owner failed; reason says why
  std::atomic<std::int32_t> culprit;  // with aborted: 1 + the rank the owner blamed, 0: none
  char reason[1024];
  // Whom the owner waits on (1 + rank, 0: nobody yet) and when it last said so (steady clock,
  // ns; the same clock in every process of the host), refreshed every few ms while it waits.
  // A peer that times out reads it to follow the waits to the rank that is really silent.
  std::atomic<std::int32_t> waiting_on;
  std::atomic<std::int64_t> waiting_heartbeat_ns;
  Doorbell doorbell;                  // the owner sleeps on it, its peers ring it
};
static_assert(sizeof(ShmSegmentHeader) <= 4096);

struct alignas(64) ShmChannelControl {
  alignas(64) std::atomic<std::uint64_t> produced;  // slots written by the sender
  alignas(64) std::atomic<std::uint64_t> consumed;  // slots released by the receiver
};

struct alignas(64) ShmSlotHeader {
  CallTag tag;
  std::uint64_t message_bytes;
  std::uint64_t offset;
  std::uint64_t len;
};

// A mapped segment; the owner creates, the peers open.
class ShmSegment {
 public:
  static ShmSegment create(const std::string& name, const ShmLayout& layout, int owner_rank);
  static ShmSegment open(const std::string& name);
  ShmSegment() = default;
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ~ShmSegment();

  void unlink();
  ShmSegmentHeader& header() const { return *static_cast<ShmSegmentHeader*>(base_); }
  ShmChannelControl& control(std::uint32_t channel) const;
  ShmSlotHeader& slot(std::uint32_t channel, std::uint64_t index) const;
  std::byte* slot_data(std::uint32_t channel, std::uint64_t index) const;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
  bool owner_ = false;
};

}  // namespace riseml
