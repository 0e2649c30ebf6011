#include "tcp_link.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "link_errors.hpp"

namespace riseml {

namespace {
constexpr std::uint32_t kFrameMagic = 0x52534d46;  // "RSMF"
constexpr std::uint32_t kData = 1, kAbort = 2;
// Staging for reducing receives: a multiple of 64 bytes, so segments stay element-aligned.
constexpr std::size_t kStagingBytes = 256 << 10;
}  // namespace

TcpLink::TcpLink(std::vector<Fd> connections, int peer, std::string peer_name)
    : fds_(std::move(connections)), peer_(peer), peer_name_(std::move(peer_name)) {
  for (std::size_t i = 0; i < fds_.size(); ++i)
    staging_.push_back(std::make_unique<std::byte[]>(kStagingBytes));
  send_parts_.resize(fds_.size());
  recv_parts_.resize(fds_.size());
}

TcpLink::~TcpLink() = default;

void TcpLink::part_range(std::size_t bytes, std::size_t p, std::size_t& lo, std::size_t& hi) const {
  const std::size_t k = fds_.size();
  auto edge = [&](std::size_t i) {
    if (i >= k) return bytes;
    return std::min(bytes, (bytes / k * i) & ~std::size_t{63});
  };
  lo = edge(p);
  hi = edge(p + 1);
}

bool TcpLink::salvage_abort_reason(std::string& reason) {
  // Skip what is left of the frame being received, then read frames until the abort one.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  const int fd = fds_[0].get();
  RecvPart& r = recv_parts_[0];
  std::byte sink[4096];
  auto skip = [&](std::size_t n) {
    while (n > 0) {
      const std::size_t k = std::min(n, sizeof sink);
      if (!read_all(fd, sink, k, deadline)) return false;
      n -= k;
    }
    return true;
  };
  FrameHeader h = r.header;
  if (r.header_got > 0 && r.header_got < sizeof(FrameHeader)) {
    if (!read_all(fd, reinterpret_cast<char*>(&h) + r.header_got,
                  sizeof(FrameHeader) - r.header_got, deadline))
      return false;
  }
  if (r.header_got > 0) {
    if (h.magic != kFrameMagic || h.kind != kData || !skip(h.part_bytes - std::min<std::size_t>(r.got, h.part_bytes)))
      return false;
  }
  for (;;) {
    if (!read_all(fd, &h, sizeof h, deadline) || h.magic != kFrameMagic) return false;
    if (h.kind == kAbort) {
      reason.assign(std::min<std::size_t>(h.part_bytes, 4096), '\0');
      return read_all(fd, reason.data(), reason.size(), deadline);
    }
    if (!skip(h.part_bytes)) return false;
  }
}

void TcpLink::fail_io(const char* what, int err) {
  // The peer may have said why it gave up before closing: prefer its reason.
  std::string reason;
  if ((err == 0 || err == ECONNRESET || err == EPIPE) && fds_.size() == 1 &&
      salvage_abort_reason(reason))
    throw_peer_aborted(peer_name_, peer_, reason);
  if (err == 0 || err == ECONNRESET || err == EPIPE)
    throw CollectiveError(ErrorKind::peer_failed,
                          peer_name_ + " closed the connection (" + what + "); it died or gave up",
                          peer_);
  throw CollectiveError(ErrorKind::peer_failed,
                        std::string(what) + " " + peer_name_ + " failed: " + std::strerror(err),
                        peer_);
}

void TcpLink::begin_send(const CallTag& tag, const std::byte* data, std::size_t bytes) {
  send_tag_ = tag;
  send_data_ = data;
  send_bytes_ = bytes;
  send_done_ = false;
  for (std::size_t p = 0; p < send_parts_.size(); ++p) {
    SendPart& s = send_parts_[p];
    std::size_t lo, hi;
    part_range(bytes, p, lo, hi);
    s.header = FrameHeader{kFrameMagic, kData, tag, bytes, lo, hi - lo, 0};
    s.header_sent = 0;
    s.sent = 0;
  }
}

bool TcpLink::progress_send(bool& moved, std::size_t ready) {
  send_ready_ = ready;
  bool all = true;
  for (std::size_t p = 0; p < send_parts_.size(); ++p) {
    SendPart& s = send_parts_[p];
    const std::size_t lo = s.header.part_offset, len = s.header.part_bytes;
    for (;;) {
      const std::size_t limit = ready >= lo + len ? len : (ready > lo ? ready - lo : 0);
      if (s.header_sent == sizeof(FrameHeader) && s.sent == len) break;
      iovec iov[2];
      int n = 0;
      if (s.header_sent < sizeof(FrameHeader))
        iov[n++] = {reinterpret_cast<char*>(&s.header) + s.header_sent,
                    sizeof(FrameHeader) - s.header_sent};
      if (limit > s.sent)
        iov[n++] = {const_cast<std::byte*>(send_data_ + lo + s.sent), limit - s.sent};
      if (n == 0) break;  // waiting for the producer
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<std::size_t>(n);
      const ssize_t w = ::sendmsg(fds_[p].get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) {
        if (errno == EAGAIN || errno == EINTR) break;
        fail_io("sending to", errno);
      }
      moved = true;
      std::size_t wrote = static_cast<std::size_t>(w);
      const std::size_t h = std::min(wrote, sizeof(FrameHeader) - s.header_sent);
      s.header_sent += h;
      s.sent += wrote - h;
    }
    if (s.header_sent < sizeof(FrameHeader) || s.sent < len) all = false;
  }
  send_done_ = all;
  return all;
}

void TcpLink::begin_recv(const CallTag& tag, std::size_t bytes, std::byte* direct,
                         SegmentSink sink) {
  recv_tag_ = tag;
  recv_bytes_ = bytes;
  recv_direct_ = direct;
  recv_sink_ = sink;
  for (std::size_t p = 0; p < recv_parts_.size(); ++p) {
    RecvPart& r = recv_parts_[p];
    r.header_got = r.got = r.delivered = 0;
    part_range(bytes, p, r.lo, r.hi);
  }
}

void TcpLink::read_abort_reason(std::size_t conn, const FrameHeader& h) {
  std::string reason(std::min<std::size_t>(h.part_bytes, 4096), '\0');
  if (!read_all(fds_[conn].get(), reason.data(), reason.size(),
                std::chrono::steady_clock::now() + std::chrono::seconds(1)))
    reason = "(reason lost)";
  throw_peer_aborted(peer_name_, peer_, reason);
}

bool TcpLink::progress_recv(bool& moved) {
  bool all = true;
  const bool staged = !recv_direct_ || recv_sink_;
  for (std::size_t p = 0; p < recv_parts_.size(); ++p) {
    RecvPart& r = recv_parts_[p];
    const int fd = fds_[p].get();
    const std::size_t len = r.hi - r.lo;
    for (;;) {
      if (r.header_got < sizeof(FrameHeader)) {
        const ssize_t n = ::recv(fd, reinterpret_cast<char*>(&r.header) + r.header_got,
                                 sizeof(FrameHeader) - r.header_got, MSG_DONTWAIT);
        if (n == 0) fail_io("receiving from", 0);
        if (n < 0) {
          if (errno == EAGAIN || errno == EINTR) break;
          fail_io("receiving from", errno);
        }
        moved = true;
        r.header_got += static_cast<std::size_t>(n);
        if (r.header_got < sizeof(FrameHeader)) continue;
        const FrameHeader& h = r.header;
        if (h.magic != kFrameMagic)
          throw CollectiveError(ErrorKind::peer_failed,
                                peer_name_ + " sent a corrupt frame", peer_);
        if (h.kind == kAbort) read_abort_reason(p, h);
        if (!(h.tag == recv_tag_)) throw_tag_mismatch(peer_name_, peer_, h.tag, recv_tag_);
        if (h.message_bytes != recv_bytes_)
          throw_size_mismatch(peer_name_, peer_, h.message_bytes, recv_bytes_, recv_tag_);
        if (h.part_offset != r.lo || h.part_bytes != len)
          throw CollectiveError(ErrorKind::peer_failed,
                                peer_name_ + " split a message differently (is "
                                "RISEML_TCP_CONNECTIONS the same everywhere?)", peer_);
      }
      if (r.got == len) break;
      std::byte* into;
      std::size_t room;
      if (staged) {
        const std::size_t fill = r.got - r.delivered;
        into = staging_[p].get() + fill;
        room = std::min(kStagingBytes - fill, len - r.got);
      } else {
        into = recv_direct_ + r.lo + r.got;
        room = len - r.got;
      }
      const ssize_t n = ::recv(fd, into, room, MSG_DONTWAIT);
      if (n == 0) fail_io("receiving from", 0);
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) break;
        fail_io("receiving from", errno);
      }
      moved = true;
      r.got += static_cast<std::size_t>(n);
      if (!staged) {
        r.delivered = r.got;
      } else if (r.got - r.delivered == kStagingBytes || r.got == len) {
        const std::size_t seg = r.got - r.delivered;
        const std::size_t off = r.lo + r.delivered;
        if (recv_direct_) std::memcpy(recv_direct_ + off, staging_[p].get(), seg);
        if (recv_sink_) recv_sink_(staging_[p].get(), off, seg);
        r.delivered = r.got;
      }
    }
    if (r.header_got < sizeof(FrameHeader) || r.delivered < len) all = false;
  }
  return all;
}

std::size_t TcpLink::received_bytes() const {
  std::size_t prefix = 0;
  for (const RecvPart& r : recv_parts_) {
    prefix = r.lo + r.delivered;
    if (r.delivered < r.hi - r.lo) break;
  }
  return prefix;
}

int TcpLink::wait_fd(bool sending, short* events) const {
  for (std::size_t p = 0; p < fds_.size(); ++p) {
    if (sending) {
      const SendPart& s = send_parts_[p];
      const std::size_t lo = s.header.part_offset, len = s.header.part_bytes;
      const std::size_t sendable = send_ready_ >= lo + len ? len : (send_ready_ > lo ? send_ready_ - lo : 0);
      if (s.header_sent < sizeof(FrameHeader) || s.sent < sendable) {
        *events = POLLOUT;
        return fds_[p].get();
      }
    } else {
      const RecvPart& r = recv_parts_[p];
      if (r.header_got < sizeof(FrameHeader) || r.delivered < r.hi - r.lo) {
        *events = POLLIN;
        return fds_[p].get();
      }
    }
  }
  return kNothingToWaitFor;
}

void TcpLink::abort(const std::string& reason) noexcept {
  // An abort frame is only well-formed between frames, so a half-sent frame is first padded
  // to its end (the peer's call fails anyway; the padding only lets it read the reason). All
  // within a short deadline: a peer that does not read just sees the connection close.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  static const std::byte zeros[4096] = {};
  bool clean = !fds_.empty();
  for (std::size_t p = 0; p < send_parts_.size() && clean && !send_done_; ++p) {
    SendPart& s = send_parts_[p];
    const int fd = fds_[p].get();
    if (s.header_sent < sizeof(FrameHeader)) {
      clean = write_all(fd, reinterpret_cast<const char*>(&s.header) + s.header_sent,
                        sizeof(FrameHeader) - s.header_sent, deadline);
      s.header_sent = sizeof(FrameHeader);
    }
    while (clean && s.sent < s.header.part_bytes) {
      const std::size_t n = std::min(sizeof zeros, s.header.part_bytes - s.sent);
      clean = write_all(fd, zeros, n, deadline);
      s.sent += n;
    }
  }
  if (clean) {
    FrameHeader h{kFrameMagic, kAbort, {}, 0, 0, std::min<std::size_t>(reason.size(), 4096), 0};
    if (write_all(fds_[0].get(), &h, sizeof h, deadline))
      write_all(fds_[0].get(), reason.data(), h.part_bytes, deadline);
  }
  for (auto& fd : fds_) ::shutdown(fd.get(), SHUT_RDWR);
}

}  // namespace riseml
