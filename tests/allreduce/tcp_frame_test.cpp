// The TCP wire protocol's promise: a receive completes only with the sender's real bytes. A
// sender that gives up inside a frame pads it out and ends it "abandoned"; the receiver must
// fail with the sender's reason and never complete, and a pipeline fed by the receive must not
// be able to forward the frame's last byte before the trailer vouched for it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <riseml/collective_error.hpp>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "transport/tcp_link.hpp"
#include <riseml/tcp_socket.hpp>

namespace riseml {
namespace {

using namespace std::chrono_literals;

// `k` connected loopback TCP socket pairs: first[i] talks to second[i].
void socket_pairs(int k, std::vector<Fd>& first, std::vector<Fd>& second) {
  Fd listener(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(listener.get(), 16), 0);
  ASSERT_EQ(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
  for (int i = 0; i < k; ++i) {
    Fd c(::socket(AF_INET, SOCK_STREAM, 0));
    ASSERT_EQ(::connect(c.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    Fd s(::accept(listener.get(), nullptr, nullptr));
    ASSERT_TRUE(s);
    tune_socket(c.get());
    tune_socket(s.get());
    first.push_back(std::move(c));
    second.push_back(std::move(s));
  }
}

CallTag tag_for(std::size_t bytes) {
  CallTag t{};
  t.sequence = 7;
  t.count = bytes;
  return t;
}

// Receives until it completes or throws; records whether it ever reported every byte usable.
struct Outcome {
  bool completed = false;
  std::string error;
  std::size_t max_usable = 0;
};
Outcome receive(TcpLink& link, std::size_t bytes, std::byte* into,
                std::chrono::steady_clock::duration limit = 5s) {
  Outcome o;
  link.begin_recv(tag_for(bytes), bytes, into, {});
  const auto until = std::chrono::steady_clock::now() + limit;
  try {
    while (std::chrono::steady_clock::now() < until) {
      bool moved = false;
      const bool done = link.progress_recv(moved);
      o.max_usable = std::max(o.max_usable, link.received_bytes());
      if (done) {
        o.completed = true;
        return o;
      }
      if (!moved) std::this_thread::sleep_for(100us);
    }
    o.error = "timed out";
  } catch (const CollectiveError& e) {
    o.error = e.what();
  }
  return o;
}

class AbandonedFrame : public ::testing::TestWithParam<int> {};

TEST_P(AbandonedFrame, FailsWithTheReasonAndNeverCompletes) {
  const int connections = GetParam();
  std::vector<Fd> a, b;
  socket_pairs(connections, a, b);
  TcpLink sender(std::move(a), 1, "rank 1 (host x)");
  TcpLink receiver(std::move(b), 0, "rank 0 (host y)");
  receiver.set_world_size(3);
  const std::size_t bytes = 3 << 20;
  std::vector<std::byte> data(bytes, std::byte{0xab});
  std::vector<std::byte> into(bytes);
  // The sender has only produced part of the message (a pipeline), then gives up: the rest
  // of every started frame goes out as padding.
  std::thread t([&] {
    sender.begin_send(tag_for(bytes), data.data(), bytes);
    bool moved = false;
    for (int i = 0; i < 50; ++i) {
      sender.progress_send(moved, bytes / 3 + 17);
      std::this_thread::sleep_for(1ms);
    }
    sender.abort("rank 2 (host z) closed the connection", 2);
  });
  const Outcome o = receive(receiver, bytes, into.data());
  t.join();
  EXPECT_FALSE(o.completed);
  // The culprit the sender named travels with the abort: the error blames it, not the sender.
  EXPECT_EQ(o.error.rfind("rank 2 (host z) closed the connection", 0), 0u) << o.error;
  EXPECT_LT(o.max_usable, bytes);
}

INSTANTIATE_TEST_SUITE_P(Connections, AbandonedFrame, ::testing::Values(1, 3));

// Raw frames written by hand, to hold the trailer back.
struct RawFrames {
  int fd;
  void header(std::size_t bytes, std::uint32_t kind = 1) {
    TcpLink::FrameHeader h{0x52534d46, kind, tag_for(bytes), bytes, 0, bytes, 0};
    if (kind == 2) h = TcpLink::FrameHeader{0x52534d46, 2, {}, 0, 0, bytes, 0};
    ASSERT_TRUE(write_all(fd, &h, sizeof h, std::chrono::steady_clock::now() + 1s));
  }
  void bytes(const void* p, std::size_t n) {
    ASSERT_TRUE(write_all(fd, p, n, std::chrono::steady_clock::now() + 1s));
  }
  void trailer(std::uint32_t status, std::uint32_t magic = 0x52534d45) {
    TcpLink::FrameTrailer t{magic, status};
    bytes(&t, sizeof t);
  }
};

TEST(TcpFrames, TheLastByteWaitsForTheTrailer) {
  std::vector<Fd> a, b;
  socket_pairs(1, a, b);
  RawFrames raw{a[0].get()};
  TcpLink receiver(std::move(b), 1, "rank 1 (host x)");
  const std::size_t n = 100000;
  std::vector<std::byte> payload(n, std::byte{7}), into(n);
  raw.header(n);
  raw.bytes(payload.data(), n);
  const Outcome early = receive(receiver, n, into.data(), 300ms);
  EXPECT_FALSE(early.completed);
  EXPECT_EQ(early.max_usable, n - 1);  // everything but the last byte may be forwarded
  raw.trailer(1);
  bool moved = false;
  bool done = false;
  for (int i = 0; i < 1000 && !done; ++i, std::this_thread::sleep_for(1ms))
    done = receiver.progress_recv(moved);
  EXPECT_TRUE(done);
  EXPECT_EQ(receiver.received_bytes(), n);
  EXPECT_EQ(std::memcmp(into.data(), payload.data(), n), 0);
}

TEST(TcpFrames, AnAbandonedTrailerFailsWithTheAbortReason) {
  std::vector<Fd> a, b;
  socket_pairs(1, a, b);
  RawFrames raw{a[0].get()};
  TcpLink receiver(std::move(b), 1, "rank 1 (host x)");
  const std::size_t n = 4096;
  std::vector<std::byte> zeros(n), into(n);
  const std::string reason = "rank 1 gave up: rank 3 (host w) died";
  raw.header(n);
  raw.bytes(zeros.data(), n);
  raw.trailer(2);
  raw.header(reason.size(), 2);
  raw.bytes(reason.data(), reason.size());
  const Outcome o = receive(receiver, n, into.data());
  EXPECT_FALSE(o.completed);
  EXPECT_LT(o.max_usable, n);
  EXPECT_NE(o.error.find("rank 3 (host w) died"), std::string::npos) << o.error;
}

TEST(TcpFrames, AnAbandonedFrameWithoutReasonStillFails) {
  std::vector<Fd> a, b;
  socket_pairs(1, a, b);
  RawFrames raw{a[0].get()};
  TcpLink receiver(std::move(b), 1, "rank 1 (host x)");
  const std::size_t n = 64;
  std::vector<std::byte> zeros(n), into(n);
  raw.header(n);
  raw.bytes(zeros.data(), n);
  raw.trailer(2);
  ::shutdown(raw.fd, SHUT_RDWR);
  const Outcome o = receive(receiver, n, into.data());
  EXPECT_FALSE(o.completed);
  EXPECT_NE(o.error.find("rank 1 (host x) abandoned a message"), std::string::npos) << o.error;
}

TEST(TcpFrames, ACorruptTrailerFails) {
  std::vector<Fd> a, b;
  socket_pairs(1, a, b);
  RawFrames raw{a[0].get()};
  TcpLink receiver(std::move(b), 1, "rank 1 (host x)");
  const std::size_t n = 64;
  std::vector<std::byte> data(n), into(n);
  raw.header(n);
  raw.bytes(data.data(), n);
  raw.trailer(1, 0xdeadbeef);
  const Outcome o = receive(receiver, n, into.data());
  EXPECT_FALSE(o.completed);
  EXPECT_NE(o.error.find("corrupt frame end"), std::string::npos) << o.error;
}

TEST(TcpFrames, AConnectionClosedBeforeTheTrailerFails) {
  std::vector<Fd> a, b;
  socket_pairs(1, a, b);
  RawFrames raw{a[0].get()};
  TcpLink receiver(std::move(b), 1, "rank 1 (host x)");
  const std::size_t n = 5000;
  std::vector<std::byte> data(n), into(n);
  raw.header(n);
  raw.bytes(data.data(), n);  // a sender killed between its last byte and the trailer
  a.clear();
  const Outcome o = receive(receiver, n, into.data());
  EXPECT_FALSE(o.completed);
  EXPECT_LT(o.max_usable, n);
  EXPECT_NE(o.error.find("closed the connection"), std::string::npos) << o.error;
}

}  // namespace
}  // namespace riseml
