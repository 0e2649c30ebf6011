// Every TCP connection must prove knowledge of the job secret: a stranger's connection is
// refused (and logged) while the job carries on with unchanged results, and a rank with the
// wrong secret is refused by its peers, every rank failing within the timeout.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "rank_threads.hpp"

namespace riseml {
namespace {

using namespace std::chrono_literals;

// Forwards to an in-memory rendezvous; hooks run after each fence and replace the secret.
class HookedRendezvous : public Rendezvous {
 public:
  HookedRendezvous(std::shared_ptr<InMemoryRendezvousHub> hub, int rank)
      : inner_(std::move(hub), rank) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void put(std::string_view k, const std::vector<std::byte>& v) override { inner_.put(k, v); }
  void fence(std::chrono::milliseconds t) override {
    inner_.fence(t);
    ++fences;
    if (after_fence) after_fence(fences);
  }
  std::vector<std::byte> get(int r, std::string_view k, std::chrono::milliseconds t) override {
    return inner_.get(r, k, t);
  }
  std::vector<std::byte> job_secret() override {
    return secret.empty() ? inner_.job_secret() : secret;
  }

  int fences = 0;
  std::function<void(int)> after_fence;
  std::vector<std::byte> secret;

 private:
  InMemoryRendezvous inner_;
};

CommunicatorOptions tcp_options(std::chrono::milliseconds timeout) {
  CommunicatorOptions o;
  o.transport = TransportChoice::tcp;
  o.timeout = timeout;
  return o;
}

int connect_to(const std::string& address) {
  const auto colon = address.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, address.substr(0, colon).c_str(), &a.sin_addr);
  a.sin_port = htons(static_cast<std::uint16_t>(std::stoi(address.substr(colon + 1))));
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

TEST(Security, ConnectionsWithoutTheSecretAreRefusedAndResultsUnchanged) {
  std::atomic<int> refused{0}, accepted{0};
  std::vector<std::thread> rogues;
  std::mutex rogues_mutex;
  auto factory = [&](std::shared_ptr<InMemoryRendezvousHub> hub, int r) {
    auto rv = std::make_unique<HookedRendezvous>(hub, r);
    HookedRendezvous* self = rv.get();
    rv->after_fence = [&, self, r](int n) {
      if (n != 2) return;  // the fence after the TCP addresses were published
      if (r != 0) {
        std::this_thread::sleep_for(300ms);  // let the rogues reach rank 0's backlog first
        return;
      }
      const auto bytes = self->get(0, "riseml/tcp", 1s);
      const std::string address(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      // Rogue 1 claims to be rank 1 and answers the challenge with a made-up MAC.
      // Rogue 2 sends garbage.
      for (int kind = 0; kind < 2; ++kind) {
        int fd = connect_to(address);
        ASSERT_GE(fd, 0);
        std::lock_guard lock(rogues_mutex);
        rogues.emplace_back([&, fd, kind] {
          unsigned char hello[52] = {};
          std::uint32_t magic = 0x52534d4c, version = 1;
          std::int32_t ids[3] = {1, 0, 0};
          std::memcpy(hello, &magic, 4);
          std::memcpy(hello + 4, &version, 4);
          std::memcpy(hello + 8, ids, 12);
          if (kind == 1) std::memset(hello, 0x5a, sizeof hello);
          ::send(fd, hello, sizeof hello, MSG_NOSIGNAL);
          unsigned char challenge[64];
          if (kind == 0 && ::recv(fd, challenge, sizeof challenge, MSG_WAITALL) == 64) {
            unsigned char fake_mac[32];
            std::memset(fake_mac, 0x42, sizeof fake_mac);
            ::send(fd, fake_mac, sizeof fake_mac, MSG_NOSIGNAL);
          }
          unsigned char verdict = 0;
          if (::recv(fd, &verdict, 1, 0) == 1 && verdict == 1)
            ++accepted;
          else
            ++refused;
          ::close(fd);
        });
      }
    };
    return std::unique_ptr<Rendezvous>(std::move(rv));
  };
  auto outcomes = test::run_ranks(3, [](int) { return tcp_options(20s); }, [](Communicator& comm) {
    std::vector<float> v(100003, static_cast<float>(comm.rank() + 1));
    comm.allreduce(v.data(), v.data(), v.size(), DataType::float32, ReduceOp::sum);
    for (float x : v)
      if (x != 6.0f) throw std::runtime_error("wrong result");
  }, factory);
  for (auto& t : rogues) t.join();
  for (auto& o : outcomes) EXPECT_TRUE(o.ok) << o.error;
  EXPECT_EQ(refused.load(), 2);
  EXPECT_EQ(accepted.load(), 0);
}

TEST(Security, ARankWithTheWrongSecretIsRefusedAndNobodyHangs) {
  auto factory = [](std::shared_ptr<InMemoryRendezvousHub> hub, int r) {
    auto rv = std::make_unique<HookedRendezvous>(hub, r);
    if (r == 2) rv->secret.assign(32, std::byte{0x13});
    return std::unique_ptr<Rendezvous>(std::move(rv));
  };
  const auto start = std::chrono::steady_clock::now();
  auto outcomes = test::run_ranks(3, [](int) { return tcp_options(2s); }, [](Communicator& comm) {
    float x = 1;
    comm.allreduce(&x, &x, 1, DataType::float32, ReduceOp::sum);
  }, factory);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 8s);
  ASSERT_FALSE(outcomes[2].ok);
  EXPECT_EQ(outcomes[2].kind, ErrorKind::authentication) << outcomes[2].error;
  for (int r : {0, 1}) {
    ASSERT_FALSE(outcomes[r].ok);
    EXPECT_NE(outcomes[r].error.find("rank 2"), std::string::npos) << outcomes[r].error;
  }
}

// Strangers that connect during setup and stay silent, and a flood of connect-and-close:
// every handshake runs at once with the others, so the peers are admitted as fast as without
// them, and the log says how many were refused in a few lines.
TEST(Security, HeldAndFloodingConnectionsDoNotStallSetup) {
  std::vector<int> held;
  std::mutex held_mutex;
  std::atomic<int> flooded{0};
  std::atomic<std::int64_t> flood_done{0};
  std::thread flood;
  auto factory = [&](std::shared_ptr<InMemoryRendezvousHub> hub, int r) {
    auto rv = std::make_unique<HookedRendezvous>(hub, r);
    HookedRendezvous* self = rv.get();
    rv->after_fence = [&, self, r](int n) {
      if (n != 2) return;  // the TCP addresses are published
      const auto bytes = self->get(r, "riseml/tcp", 1s);
      const std::string address(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      // Ten silent connections held to this rank for the whole setup, then a flood.
      for (int i = 0; i < 10; ++i) {
        const int fd = connect_to(address);
        ASSERT_GE(fd, 0);
        std::lock_guard lock(held_mutex);
        held.push_back(fd);
      }
      // The flood comes from its own thread, while rank 0 accepts; the other ranks connect
      // once it is over, so the strangers are all there first.
      if (r == 0) {
        std::lock_guard lock(held_mutex);
        flood = std::thread([&flooded, &flood_done, address] {
          for (int i = 0; i < 1000; ++i) {
            const int fd = connect_to(address);
            if (fd >= 0) ::close(fd), ++flooded;
          }
          flood_done = std::chrono::steady_clock::now().time_since_epoch().count();
        });
      } else {
        while (flood_done.load() == 0) std::this_thread::sleep_for(1ms);
      }
    };
    return std::unique_ptr<Rendezvous>(std::move(rv));
  };
  // Capture this process's stderr to count the log lines.
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  std::fflush(stderr);
  const int saved = ::dup(2);
  ::dup2(::fileno(log), 2);
  auto outcomes = test::run_ranks(3, [](int) { return tcp_options(20s); }, [](Communicator& comm) {
    std::vector<float> v(4099, static_cast<float>(comm.rank() + 1));
    comm.allreduce(v.data(), v.data(), v.size(), DataType::float32, ReduceOp::sum);
    for (float x : v)
      if (x != 6.0f) throw std::runtime_error("wrong result");
  }, factory);
  const auto took = std::chrono::steady_clock::now().time_since_epoch() -
                    std::chrono::steady_clock::duration(flood_done.load());
  if (flood.joinable()) flood.join();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  for (int fd : held) ::close(fd);
  for (auto& o : outcomes) EXPECT_TRUE(o.ok) << o.error;
  // From the end of the flood to a finished allreduce: before, each silent connection held
  // the acceptor for up to 5 s, one after the other.
  EXPECT_LT(took, 3s);
  EXPECT_EQ(flooded.load(), 1000);
  std::rewind(log);
  std::string text;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, log)) text.append(buf, n);
  std::fclose(log);
  int lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_LE(lines, 3 * 5) << text;  // a few per rank, whatever the number of strangers
  EXPECT_NE(text.find("more connection(s)"), std::string::npos) << text;
}

}  // namespace
}  // namespace riseml
