// The elastic rendezvous store: values and fences among any members, a world change when the
// members shrink, fences that time out naming who is missing, and strangers (wrong secret,
// silence, junk, malformed frames) that are turned away while the store keeps serving.
#include <riseml/communicator.hpp>
#include <riseml/elastic/store_client.hpp>
#include <riseml/elastic/store_rendezvous.hpp>
#include <riseml/elastic/store_server.hpp>

#include "store_protocol.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <mutex>
#include <random>
#include <thread>

namespace riseml::elastic {
namespace {

using namespace std::chrono_literals;

std::vector<std::byte> secret_of(int seed) {
  std::vector<std::byte> s(32);
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::byte>(i * 7 + static_cast<std::size_t>(seed));
  return s;
}

struct Logged {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::vector<WorldChange> changes;
  std::vector<FailureReport> reports;
  std::vector<int> ready;
  bool has(const std::string& part) {
    std::lock_guard lock(mutex);
    for (const auto& l : lines)
      if (l.find(part) != std::string::npos) return true;
    return false;
  }
};

std::unique_ptr<StoreServer> start_server(Logged& logged, std::chrono::milliseconds handshake = 2000ms) {
  StoreServerOptions o;
  o.secret = secret_of(1);
  o.handshake_timeout = handshake;
  o.log = [&logged](const std::string& line) {
    std::lock_guard lock(logged.mutex);
    logged.lines.push_back(line);
  };
  o.on_world_change = [&logged](const WorldChange& c) {
    std::lock_guard lock(logged.mutex);
    logged.changes.push_back(c);
  };
  o.on_failure_report = [&logged](const FailureReport& r) {
    std::lock_guard lock(logged.mutex);
    logged.reports.push_back(r);
  };
  o.on_worker_ready = [&logged](int rank) {
    std::lock_guard lock(logged.mutex);
    logged.ready.push_back(rank);
  };
  return std::make_unique<StoreServer>(std::move(o));
}

std::shared_ptr<StoreClient> client_of(const StoreServer& server, int seed = 1) {
  return std::make_shared<StoreClient>(server.address(), secret_of(seed), 2000ms);
}

Fd raw_connection(const StoreServer& server) {
  const sockaddr_in a = parse_address(server.address());
  Fd fd(::socket(AF_INET, SOCK_STREAM, 0));
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  return fd;
}

// A connection that passed the handshake, for sending frames by hand.
Fd authenticated_connection(const StoreServer& server) {
  Fd fd = raw_connection(server);
  const Deadline d = std::chrono::steady_clock::now() + 2s;
  char magic[protocol::magic.size()];
  protocol::Nonce server_nonce{};
  EXPECT_TRUE(read_all(fd.get(), magic, sizeof magic, d));
  EXPECT_TRUE(read_all(fd.get(), server_nonce.data(), server_nonce.size(), d));
  const protocol::Nonce client_nonce = protocol::random_nonce();
  const protocol::Mac mac = protocol::handshake_mac(secret_of(1), 'c', server_nonce, client_nonce);
  EXPECT_TRUE(write_all(fd.get(), client_nonce.data(), client_nonce.size(), d));
  EXPECT_TRUE(write_all(fd.get(), mac.data(), mac.size(), d));
  protocol::Mac theirs{};
  EXPECT_TRUE(read_all(fd.get(), theirs.data(), theirs.size(), d));
  return fd;
}

void expect_still_serving(const StoreServer& server) {
  auto c = client_of(server);
  c->put("alive", "yes");
  EXPECT_EQ(c->get("alive").value_or(""), "yes");
}

TEST(ElasticStore, ValuesAreSeenByEveryClient) {
  Logged logged;
  auto server = start_server(logged);
  auto a = client_of(*server), b = client_of(*server);
  a->put("k", std::string("v\0w", 3));
  EXPECT_EQ(b->get("k").value_or(""), std::string("v\0w", 3));
  EXPECT_FALSE(b->get("absent").has_value());
  b->put("k", "");
  EXPECT_EQ(a->get("k").value_or("x"), "");
}

TEST(ElasticStore, RendezvousOverTheStoreBuildsACommunicator) {
  Logged logged;
  auto server = start_server(logged);
  constexpr int n = 3;
  std::vector<std::future<std::vector<float>>> results;
  for (int r = 0; r < n; ++r)
    results.push_back(std::async(std::launch::async, [&, r] {
      StoreRendezvous rendezvous(client_of(*server), r, n, secret_of(1));
      CommunicatorOptions options;
      options.timeout = 20s;
      Communicator c(rendezvous, options);
      std::vector<float> v(1001, static_cast<float>(r + 1));
      c.allreduce(v.data(), v.data(), v.size(), DataType::float32, ReduceOp::sum);
      return v;
    }));
  for (auto& f : results) {
    const auto v = f.get();
    for (float x : v) ASSERT_EQ(x, 6.0f);
  }
}

TEST(ElasticStore, SurvivorsFenceWithoutTheRankThatIsGoneAndTheWorldChangeIsReported) {
  Logged logged;
  auto server = start_server(logged);
  std::vector<std::shared_ptr<StoreClient>> clients;
  for (int r = 0; r < 3; ++r) clients.push_back(client_of(*server));
  std::vector<std::unique_ptr<StoreRendezvous>> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.push_back(std::make_unique<StoreRendezvous>(clients[static_cast<std::size_t>(r)], r, 3, secret_of(1)));
  {
    std::vector<std::thread> all;
    for (int r = 0; r < 3; ++r) all.emplace_back([&, r] { ranks[static_cast<std::size_t>(r)]->fence(5s); });
    for (auto& t : all) t.join();
  }
  EXPECT_TRUE(logged.changes.empty());  // the first world is no change
  std::thread survivor([&] { ranks[0]->fence_among({0, 2}, 5s); });
  ranks[2]->fence_among({0, 2}, 5s);
  survivor.join();
  ASSERT_EQ(logged.changes.size(), 1u);
  EXPECT_EQ(logged.changes[0].members, (std::vector<int>{0, 2}));
  EXPECT_EQ(logged.changes[0].left, (std::vector<int>{1}));
  // The same world again is no change.
  std::thread again([&] { ranks[0]->fence_among({0, 2}, 5s); });
  ranks[2]->fence_among({0, 2}, 5s);
  again.join();
  EXPECT_EQ(logged.changes.size(), 1u);
}

TEST(ElasticStore, AnnouncedWorldsAreNumberedAndAJoinerIsReported) {
  Logged logged;
  auto server = start_server(logged);
  auto client = client_of(*server);
  EXPECT_FALSE(client->announced_world().has_value());
  EXPECT_EQ(server->announce_world({0, 1, 2}, "start"), 0);
  EXPECT_EQ(server->announce_world({0, 2, 3}, "mixed"), 1);
  const auto announced = client->announced_world();
  ASSERT_TRUE(announced);
  EXPECT_EQ(announced->number, 1);
  EXPECT_EQ(announced->members, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(announced->why, "mixed");
  // The world {0,1,2}, then {0,2,3}: rank 1 left and rank 3 joined, one change.
  for (const std::vector<int>& world : {std::vector<int>{0, 1, 2}, std::vector<int>{0, 2, 3}}) {
    std::vector<std::thread> members;
    for (int r : world)
      members.emplace_back([&, r] {
        StoreRendezvous(client_of(*server), r, 4, secret_of(1)).fence_among(world, 5s);
      });
    for (auto& t : members) t.join();
  }
  ASSERT_EQ(logged.changes.size(), 1u);
  EXPECT_EQ(logged.changes[0].left, std::vector<int>{1});
  EXPECT_EQ(logged.changes[0].joined, std::vector<int>{3});
}

TEST(ElasticStore, AJoinersFirstFenceWaitsLongerThanItsTimeout) {
  Logged logged;
  auto server = start_server(logged);
  StoreRendezvous joiner(client_of(*server), 3, 4, secret_of(1), 5s);
  StoreRendezvous member(client_of(*server), 0, 4, secret_of(1));
  std::thread late([&] {
    std::this_thread::sleep_for(500ms);  // the others reach their commit later
    member.fence_among({0, 3}, 5s);
  });
  EXPECT_NO_THROW(joiner.fence_among({0, 3}, 100ms));
  late.join();
  EXPECT_THROW(joiner.fence_among({0, 3}, 100ms), RendezvousError);  // only the first waits
}

TEST(ElasticStore, AFenceThatTimesOutNamesTheRanksThatNeverCame) {
  Logged logged;
  auto server = start_server(logged);
  StoreRendezvous rank0(client_of(*server), 0, 4, secret_of(1));
  StoreRendezvous rank2(client_of(*server), 2, 4, secret_of(1));
  std::thread t([&] {
    try {
      rank2.fence(300ms);
    } catch (const RendezvousError&) {
    }
  });
  try {
    rank0.fence(300ms);
    FAIL() << "the fence completed without ranks 1 and 3";
  } catch (const RendezvousError& e) {
    EXPECT_NE(std::string(e.what()).find("rank(s) 1,3 did not reach the fence within 300 ms"), std::string::npos) << e.what();
  }
  t.join();
}

TEST(ElasticStore, AClientWithAnotherSecretIsTurnedAwayAndTold) {
  Logged logged;
  auto server = start_server(logged);
  try {
    client_of(*server, 2);
    FAIL() << "a client with another secret got in";
  } catch (const RendezvousError& e) {
    EXPECT_NE(std::string(e.what()).find("turned this worker away"), std::string::npos) << e.what();
  }
  for (int i = 0; i < 100 && !logged.has("does not know the job secret"); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(logged.has("does not know the job secret"));
  expect_still_serving(*server);
}

TEST(ElasticStore, SilentAndJunkStrangersAreTurnedAway) {
  Logged logged;
  auto server = start_server(logged, 300ms);
  Fd silent = raw_connection(*server);
  std::mt19937 random(7);
  for (int i = 0; i < 20; ++i) {
    Fd junk = raw_connection(*server);
    std::string bytes(static_cast<std::size_t>(random() % 5000), '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    (void)!::send(junk.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
  for (int i = 0; i < 200 && !logged.has("no answer to the handshake"); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(logged.has("no answer to the handshake"));
  expect_still_serving(*server);
}

TEST(ElasticStore, MalformedRequestsAreRefusedAndOversizedFramesEndTheConnection) {
  Logged logged;
  auto server = start_server(logged);
  Fd fd = authenticated_connection(*server);
  const Deadline d = std::chrono::steady_clock::now() + 2s;
  const std::vector<protocol::Message> bad = {
      {'Z', {}}, {protocol::put, {"only a key"}}, {protocol::get, {}},
      {protocol::fence, {"f", "100", "5", "1,2"}},     // rank not a member
      {protocol::fence, {"f", "100", "1", "2,1"}},     // not sorted
      {protocol::fence, {"f", "-1", "1", "1"}},        // not a number
      {protocol::fence, {"f", "100", "1", "1,,2"}},    // empty item
      {'H', {"99999999999", "h"}}};
  for (const auto& m : bad) {
    ASSERT_TRUE(protocol::send_frame(fd.get(), m, d));
    const auto answer = protocol::receive_frame(fd.get(), d);
    ASSERT_TRUE(answer.has_value());
    EXPECT_EQ(answer->op, protocol::refused) << static_cast<char>(m.op);
  }
  const unsigned char huge[4] = {0xff, 0xff, 0xff, 0x7f};
  ASSERT_TRUE(write_all(fd.get(), huge, 4, d));
  char byte;
  EXPECT_FALSE(read_all(fd.get(), &byte, 1, d));  // closed
  expect_still_serving(*server);
}

TEST(ElasticStore, AClientOfAPortThatIsNotTheStoreSaysSo) {
  Fd listener(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(listener.get(), 4), 0);
  ASSERT_EQ(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string address = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  std::thread talker([&] {
    Fd c(::accept(listener.get(), nullptr, nullptr));
    const char hello[] = "SSH-2.0-OpenSSH_9.2\r\n";
    (void)!::send(c.get(), hello, sizeof hello - 1, MSG_NOSIGNAL);
    std::this_thread::sleep_for(300ms);
  });
  try {
    StoreClient c(address, secret_of(1), 200ms);
    FAIL() << "a client accepted an ssh server as the store";
  } catch (const RendezvousError& e) {
    EXPECT_NE(std::string(e.what()).find("not riseml-elastic's store"), std::string::npos) << e.what();
  }
  talker.join();
  EXPECT_THROW(StoreClient("no-port-here", secret_of(1), 100ms), RendezvousError);
  EXPECT_THROW(StoreClient("127.0.0.1:70000", secret_of(1), 100ms), RendezvousError);
}

TEST(ElasticStore, AWaitingFenceEndsWhenTheStoreStops) {
  Logged logged;
  auto server = start_server(logged);
  auto client = client_of(*server);
  auto waiting = std::async(std::launch::async, [&] {
    try {
      client->fence("f", {0, 1}, 0, 60s);
      return std::string("completed");
    } catch (const RendezvousError& e) {
      return std::string(e.what());
    }
  });
  std::this_thread::sleep_for(100ms);
  const auto stopped_at = std::chrono::steady_clock::now();
  server.reset();
  const std::string outcome = waiting.get();
  EXPECT_LT(std::chrono::steady_clock::now() - stopped_at, 5s);
  EXPECT_NE(outcome, "completed");
}

// A survivor's failure report and a joiner's "I am up" reach the driver; a joiner waits for a
// world that has it; malformed reports are refused and the store goes on.
TEST(ElasticStore, FailureReportsAndJoinersReachTheDriver) {
  Logged logged;
  auto server = start_server(logged);
  auto client = client_of(*server);
  client->report_failure(2, 4, {3, 5});
  client->report_failure(1, 0, {});
  server->announce_world({0, 1}, "start");
  auto joined = std::async(std::launch::async, [&] { return client_of(*server)->join(7, 10s); });
  for (int i = 0; i < 100 && joined.wait_for(20ms) != std::future_status::ready; ++i) {
    std::lock_guard lock(logged.mutex);
    if (!logged.ready.empty()) break;
  }
  EXPECT_NE(joined.wait_for(200ms), std::future_status::ready);  // no world with rank 7 yet
  server->announce_world({0, 1, 7}, "added");
  const auto world = joined.get();
  EXPECT_EQ(world.number, 1);
  EXPECT_EQ(world.why, "added");
  {
    std::lock_guard lock(logged.mutex);
    ASSERT_EQ(logged.reports.size(), 2u);
    EXPECT_EQ(logged.reports[0].rank, 2);
    EXPECT_EQ(logged.reports[0].world, 4);
    EXPECT_EQ(logged.reports[0].culprits, (std::vector<int>{3, 5}));
    EXPECT_TRUE(logged.reports[1].culprits.empty());
    EXPECT_EQ(logged.ready, std::vector<int>{7});
  }
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"failure.x", "0:1"}, {"failure.1", "1"}, {"failure.1", "a:1"}, {"failure.1", "1:1,,2"},
           {"ready.", ""}, {"ready.-1", ""}}) {
    auto c = client_of(*server);
    EXPECT_THROW(c->put(key, value), RendezvousError) << key << "=" << value;
  }
  EXPECT_TRUE(logged.has("a failure report needs"));
  EXPECT_TRUE(logged.has("a ready report needs"));
  EXPECT_EQ(client_of(*server)->announced_world()->number, 1);
  EXPECT_THROW(client_of(*server)->join(9, 100ms), RendezvousError);
}

TEST(ElasticStoreProtocol, DecodingNeverTrustsALength) {
  std::mt19937 random(11);
  for (int i = 0; i < 20000; ++i) {
    std::string bytes(static_cast<std::size_t>(random() % 64), '\0');
    for (char& c : bytes) c = static_cast<char>(random() % 7 == 0 ? 0xff : random());
    const auto m = protocol::decode(bytes);
    if (m) {
      EXPECT_EQ(protocol::encode(*m), bytes);
    }
  }
  const protocol::Message m{protocol::fence, {"a", "", std::string(300, 'x')}};
  const auto back = protocol::decode(protocol::encode(m));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->fields, m.fields);
  EXPECT_EQ(protocol::parse_ranks("0,1,17"), (std::vector<int>{0, 1, 17}));
  EXPECT_EQ(protocol::parse_ranks(""), std::vector<int>{});
  for (const char* bad : {",", "1,", "a", "-1", "1 ,2", "99999999"})
    EXPECT_FALSE(protocol::parse_ranks(bad).has_value()) << bad;
}

}  // namespace
}  // namespace riseml::elastic
