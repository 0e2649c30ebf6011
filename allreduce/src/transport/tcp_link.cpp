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
constexpr std::uint32_t kTrailerMagic = 0x52534d45;  // "RSME"
constexpr std::uint32_t kComplete = 1, kAbandoned = 2;
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

bool TcpLink::salvage_abort_reason(std::size_t conn, std::string& reason, int& culprit,
                                   std::chrono::steady_clock::time_point deadline) {
  // Skip what is left of the frame being received on this connection, then read frames until
  // the abort one.
  const int fd = fds_[conn].get();
  RecvPart& r = recv_parts_[conn];
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
    if (h.magic != kFrameMagic || h.kind != kData ||
        !skip(h.part_bytes - std::min<std::size_t>(r.got, h.part_bytes) + sizeof(FrameTrailer) -
              std::min(r.trailer_got, sizeof(FrameTrailer))))
      return false;
  }
  for (;;) {
    if (!read_all(fd, &h, sizeof h, deadline) || h.magic != kFrameMagic) return false;
    if (h.kind == kAbort) {
      culprit = culprit_from_wire(static_cast<std::int64_t>(h.reserved), world_size_);
      reason.assign(std::min<std::size_t>(h.part_bytes, 4096), '\0');
      return read_all(fd, reason.data(), reason.size(), deadline);
    }
    if (!skip(h.part_bytes + sizeof(FrameTrailer))) return false;
  }
}

void TcpLink::fail_io(const char* what, int err, std::size_t conn) {
  // The peer may have said why it gave up before closing (an abort frame on every connection):
  // prefer its reason. This connection first, then the others.
  const bool closed = err == 0 || err == ECONNRESET || err == EPIPE;
  if (closed) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    std::string reason;
    int culprit = -1;
    for (std::size_t i = 0; i < fds_.size(); ++i) {
      const std::size_t c = (conn + i) % fds_.size();
      if (salvage_abort_reason(c, reason, culprit, deadline))
        throw_peer_aborted(peer_name_, peer_, reason, culprit);
    }
    throw CollectiveError(ErrorKind::peer_failed,
                          peer_name_ + " closed the connection (" + what + "); it died or gave up",
                          peer_);
  }
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
    s.trailer = FrameTrailer{kTrailerMagic, kComplete};
    s.header_sent = s.sent = s.trailer_sent = 0;
  }
}

bool TcpLink::progress_send(bool& moved, std::size_t ready) {
  send_ready_ = ready;
  bool all = true;
  for (std::size_t p = 0; p < send_parts_.size(); ++p) {
    SendPart& s = send_parts_[p];
    const std::size_t lo = s.header.part_offset, len = s.header.part_bytes;
    while (!s.done()) {
      const std::size_t limit = ready >= lo + len ? len : (ready > lo ? ready - lo : 0);
      iovec iov[3];
      int n = 0;
      if (s.header_sent < sizeof(FrameHeader))
        iov[n++] = {reinterpret_cast<char*>(&s.header) + s.header_sent,
                    sizeof(FrameHeader) - s.header_sent};
      if (limit > s.sent)
        iov[n++] = {const_cast<std::byte*>(send_data_ + lo + s.sent), limit - s.sent};
      // The trailer goes out with the last bytes: all of them are real by now.
      if (limit == len)
        iov[n++] = {reinterpret_cast<char*>(&s.trailer) + s.trailer_sent,
                    sizeof(FrameTrailer) - s.trailer_sent};
      if (n == 0) break;  // waiting for the producer
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<std::size_t>(n);
      const ssize_t w = ::sendmsg(fds_[p].get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) {
        if (errno == EAGAIN || errno == EINTR) break;
        fail_io("sending to", errno, p);
      }
      moved = true;
      std::size_t wrote = static_cast<std::size_t>(w);
      const std::size_t h = std::min(wrote, sizeof(FrameHeader) - s.header_sent);
      s.header_sent += h;
      wrote -= h;
      const std::size_t d = std::min(wrote, limit - s.sent);
      s.sent += d;
      s.trailer_sent += wrote - d;
    }
    if (!s.done()) all = false;
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
    r.header_got = r.got = r.delivered = r.trailer_got = 0;
    part_range(bytes, p, r.lo, r.hi);
  }
}

void TcpLink::read_abort_reason(std::size_t conn, const FrameHeader* header) {
  // `header`: the abort frame's, already read; null: it comes next (after an abandoned frame).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  FrameHeader h{};
  if (header)
    h = *header;
  else if (!read_all(fds_[conn].get(), &h, sizeof h, deadline) || h.magic != kFrameMagic ||
           h.kind != kAbort)
    throw CollectiveError(ErrorKind::peer_failed,
                          peer_name_ + " abandoned a message and closed the connection; it "
                                       "died or gave up",
                          peer_);
  std::string reason(std::min<std::size_t>(h.part_bytes, 4096), '\0');
  if (!read_all(fds_[conn].get(), reason.data(), reason.size(), deadline))
    reason = "(reason lost)";
  throw_peer_aborted(peer_name_, peer_, reason,
                     culprit_from_wire(static_cast<std::int64_t>(h.reserved), world_size_));
}

void TcpLink::check_header(std::size_t conn) {
  const RecvPart& r = recv_parts_[conn];
  const FrameHeader& h = r.header;
  if (h.magic != kFrameMagic)
    throw CollectiveError(ErrorKind::peer_failed, peer_name_ + " sent a corrupt frame", peer_);
  if (h.kind == kAbort) read_abort_reason(conn, &h);
  if (!(h.tag == recv_tag_)) throw_tag_mismatch(peer_name_, peer_, h.tag, recv_tag_);
  if (h.message_bytes != recv_bytes_)
    throw_size_mismatch(peer_name_, peer_, h.message_bytes, recv_bytes_, recv_tag_);
  if (h.part_offset != r.lo || h.part_bytes != r.hi - r.lo)
    throw CollectiveError(ErrorKind::peer_failed,
                          peer_name_ + " split a message differently (is "
                                       "RISEML_TCP_CONNECTIONS the same everywhere?)",
                          peer_);
}

void TcpLink::check_trailer(std::size_t conn) {
  const FrameTrailer& t = recv_parts_[conn].trailer;
  if (t.magic == kTrailerMagic && t.status == kComplete) return;
  if (t.magic == kTrailerMagic && t.status == kAbandoned) read_abort_reason(conn, nullptr);
  throw CollectiveError(ErrorKind::peer_failed, peer_name_ + " sent a corrupt frame end", peer_);
}

bool TcpLink::progress_recv(bool& moved) {
  bool all = true;
  const bool staged = !recv_direct_ || recv_sink_;
  for (std::size_t p = 0; p < recv_parts_.size(); ++p) {
    RecvPart& r = recv_parts_[p];
    const int fd = fds_[p].get();
    const std::size_t len = r.hi - r.lo;
    while (!r.complete()) {
      if (r.header_got < sizeof(FrameHeader)) {
        const ssize_t n = ::recv(fd, reinterpret_cast<char*>(&r.header) + r.header_got,
                                 sizeof(FrameHeader) - r.header_got, MSG_DONTWAIT);
        if (n == 0) fail_io("receiving from", 0, p);
        if (n < 0) {
          if (errno == EAGAIN || errno == EINTR) break;
          fail_io("receiving from", errno, p);
        }
        moved = true;
        r.header_got += static_cast<std::size_t>(n);
        if (r.header_got == sizeof(FrameHeader)) check_header(p);
        continue;
      }
      // The rest of the payload (as much as fits) and, behind it, the trailer: one call.
      iovec iov[2];
      int k = 0;
      std::size_t room = 0;
      if (r.got < len) {
        std::byte* into;
        if (staged) {
          const std::size_t fill = r.got - r.delivered;
          into = staging_[p].get() + fill;
          room = std::min(kStagingBytes - fill, len - r.got);
        } else {
          into = recv_direct_ + r.lo + r.got;
          room = len - r.got;
        }
        iov[k++] = {into, room};
      }
      if (r.got + room == len)
        iov[k++] = {reinterpret_cast<char*>(&r.trailer) + r.trailer_got,
                    sizeof(FrameTrailer) - r.trailer_got};
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<std::size_t>(k);
      const ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT);
      if (n == 0) fail_io("receiving from", 0, p);
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) break;
        fail_io("receiving from", errno, p);
      }
      moved = true;
      const std::size_t data = std::min(static_cast<std::size_t>(n), room);
      r.got += data;
      r.trailer_got += static_cast<std::size_t>(n) - data;
      if (!staged) {
        r.delivered = r.got;
      } else if (data > 0 && (r.got - r.delivered == kStagingBytes || r.got == len)) {
        const std::size_t seg = r.got - r.delivered;
        const std::size_t off = r.lo + r.delivered;
        if (recv_direct_) std::memcpy(recv_direct_ + off, staging_[p].get(), seg);
        if (recv_sink_) recv_sink_(staging_[p].get(), off, seg);
        r.delivered = r.got;
      }
      if (r.complete()) check_trailer(p);
    }
    if (!r.complete()) all = false;
  }
  return all;
}

bool TcpLink::has_incoming() {
  // Every message (and an abort, and a closed connection) starts on the first connection.
  pollfd p{fds_[0].get(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

std::size_t TcpLink::received_bytes() const {
  // A frame's last byte counts only once its trailer said the bytes are real, so whatever
  // forwards them (the next send of a pipeline) cannot finish with padding.
  std::size_t prefix = 0;
  for (const RecvPart& r : recv_parts_) {
    const std::size_t len = r.hi - r.lo;
    const std::size_t usable = r.complete() ? r.delivered : std::min(r.delivered, len > 0 ? len - 1 : 0);
    prefix = r.lo + usable;
    if (usable < len || !r.complete()) break;
  }
  return prefix;
}

int TcpLink::wait_fd(bool sending, short* events) const {
  for (std::size_t p = 0; p < fds_.size(); ++p) {
    if (sending) {
      const SendPart& s = send_parts_[p];
      const std::size_t lo = s.header.part_offset, len = s.header.part_bytes;
      const std::size_t sendable = send_ready_ >= lo + len ? len : (send_ready_ > lo ? send_ready_ - lo : 0);
      if (s.header_sent < sizeof(FrameHeader) || s.sent < sendable ||
          (sendable == len && s.trailer_sent < sizeof(FrameTrailer))) {
        *events = POLLOUT;
        return fds_[p].get();
      }
    } else if (!recv_parts_[p].complete()) {
      *events = POLLIN;
      return fds_[p].get();
    }
  }
  return kNothingToWaitFor;
}

void TcpLink::abort(const std::string& reason, int culprit) noexcept {
  // An abort frame is only well-formed between frames, so a half-sent frame is first padded
  // to its end and closed with an "abandoned" trailer (the peer never takes the padding for
  // data). Then the abort frame, on every connection, so the peer finds the reason whichever
  // one it reads. All within a short deadline: a peer that does not read just sees the
  // connection close.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  static const std::byte zeros[4096] = {};
  for (std::size_t p = 0; p < fds_.size(); ++p) {
    const int fd = fds_[p].get();
    bool clean = true;
    SendPart& s = send_parts_[p];
    // A frame not begun yet needs nothing: the abort frame takes its place.
    if (!send_done_ && !s.done() && s.header_sent > 0) {
      if (s.header_sent < sizeof(FrameHeader)) {
        clean = write_all(fd, reinterpret_cast<const char*>(&s.header) + s.header_sent,
                          sizeof(FrameHeader) - s.header_sent, deadline);
        s.header_sent = sizeof(FrameHeader);
      }
      if (s.sent < s.header.part_bytes) s.trailer.status = kAbandoned;  // none of it sent yet
      while (clean && s.sent < s.header.part_bytes) {
        const std::size_t n = std::min(sizeof zeros, s.header.part_bytes - s.sent);
        clean = write_all(fd, zeros, n, deadline);
        s.sent += n;
      }
      if (clean)
        clean = write_all(fd, reinterpret_cast<const char*>(&s.trailer) + s.trailer_sent,
                          sizeof(FrameTrailer) - s.trailer_sent, deadline);
      s.trailer_sent = sizeof(FrameTrailer);
    }
    if (clean) {
      FrameHeader h{kFrameMagic, kAbort, {}, 0, 0, std::min<std::size_t>(reason.size(), 4096),
                    static_cast<std::uint64_t>(culprit + 1)};
      if (write_all(fd, &h, sizeof h, deadline)) write_all(fd, reason.data(), h.part_bytes, deadline);
    }
  }
  for (auto& fd : fds_) ::shutdown(fd.get(), SHUT_RDWR);
}

}  // namespace riseml
