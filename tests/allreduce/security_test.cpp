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

}  // namespace
}  // namespace riseml
