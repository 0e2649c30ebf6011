// The TCP transport between two ranks: non-blocking sockets that send and receive at once,
// large kernel buffers, and optionally several connections per peer (RISEML_TCP_CONNECTIONS)
// with each message split across them. Every message is one frame per connection: a header
// (tag, sizes), the bytes, then a trailer that says whether the bytes are the sender's real
// data or padding written to get out of a frame it abandoned. A receive completes only on a
// "complete" trailer, and the last byte of a frame is not released for forwarding before it, so
// padding can never pass for data, here or further down a pipeline. Received bytes go
// straight to the destination when the caller only copies, else through a staging buffer handed
// to the sink segment by segment.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "link.hpp"
#include <riseml/tcp_socket.hpp>

namespace riseml {

class TcpLink : public Link {
 public:
  TcpLink(std::vector<Fd> connections, int peer, std::string peer_name);
  ~TcpLink() override;

  const char* kind() const override { return "tcp"; }
  void begin_send(const CallTag& tag, const std::byte* data, std::size_t bytes) override;
  bool progress_send(bool& moved, std::size_t ready) override;
  void begin_recv(const CallTag& tag, std::size_t bytes, std::byte* direct,
                  SegmentSink sink) override;
  bool progress_recv(bool& moved) override;
  std::size_t received_bytes() const override;
  int wait_fd(bool sending, short* events) const override;
  void check_peer() override {}
  bool has_incoming() override;
  int incoming_fd() const override { return fds_.empty() ? -1 : fds_[0].get(); }
  void abort(const std::string& reason, int culprit) noexcept override;

  struct FrameHeader {
    std::uint32_t magic;
    std::uint32_t kind;  // 1: data, 2: abort (the reason follows)
    CallTag tag;
    std::uint64_t message_bytes;
    std::uint64_t part_offset;
    std::uint64_t part_bytes;
    std::uint64_t reserved;  // abort: 1 + the rank the sender blamed, 0: none
  };
  static_assert(sizeof(FrameHeader) == 64);
  struct FrameTrailer {
    std::uint32_t magic;
    std::uint32_t status;  // 1: the bytes are real, 2: abandoned (padding; an abort frame follows)
  };
  static_assert(sizeof(FrameTrailer) == 8);

 private:
  struct SendPart {
    FrameHeader header{};
    FrameTrailer trailer{};
    std::size_t header_sent = 0, sent = 0, trailer_sent = 0;
    bool done() const {
      return header_sent == sizeof header && sent == header.part_bytes &&
             trailer_sent == sizeof trailer;
    }
  };
  struct RecvPart {
    FrameHeader header{};
    FrameTrailer trailer{};
    std::size_t header_got = 0, got = 0, delivered = 0, trailer_got = 0;
    std::size_t lo = 0, hi = 0;
    bool complete() const { return trailer_got == sizeof trailer; }  // and checked
  };
  void part_range(std::size_t bytes, std::size_t p, std::size_t& lo, std::size_t& hi) const;
  [[noreturn]] void fail_io(const char* what, int err, std::size_t conn);
  bool salvage_abort_reason(std::size_t conn, std::string& reason, int& culprit,
                            std::chrono::steady_clock::time_point deadline);
  [[noreturn]] void read_abort_reason(std::size_t conn, const FrameHeader* header);
  void check_header(std::size_t conn);
  void check_trailer(std::size_t conn);

  std::vector<Fd> fds_;
  int peer_;
  std::string peer_name_;
  std::vector<std::unique_ptr<std::byte[]>> staging_;

  CallTag send_tag_{};
  const std::byte* send_data_ = nullptr;
  std::size_t send_bytes_ = 0;
  std::vector<SendPart> send_parts_;
  std::size_t send_ready_ = 0;  // the `ready` of the last progress_send
  bool send_done_ = true;

  CallTag recv_tag_{};
  std::size_t recv_bytes_ = 0;
  std::byte* recv_direct_ = nullptr;
  SegmentSink recv_sink_{};
  std::vector<RecvPart> recv_parts_;
};

}  // namespace riseml
