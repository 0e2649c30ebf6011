// alltoall and alltoallv: every type, 1 to 4 ranks over the in-process, shared-memory and TCP
// transports, even, uneven and empty blocks (large enough on shared memory to wrap the slot
// rings, and through single-copy reads), bit-exact against what each rank sent; counts that
// disagree fail on every rank as a mismatch naming both ranks and both counts; the C API.
#include <gtest/gtest.h>

#include <riseml/allreduce.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <numeric>

#include "rank_threads.hpp"
#include "transport/single_copy.hpp"

namespace riseml {
namespace {

using namespace std::chrono_literals;

constexpr TransportChoice kTransports[] = {TransportChoice::inproc, TransportChoice::shm,
                                           TransportChoice::tcp};

CommunicatorOptions options_for(TransportChoice t, std::chrono::milliseconds timeout = 30s) {
  CommunicatorOptions o;
  o.transport = t;
  o.timeout = timeout;
  return o;
}

std::string name(TransportChoice t) { return std::string(to_string(t)); }

// Byte b of the block rank `from` sends to rank `to`: differs by sender, receiver and position.
std::byte pattern(int from, int to, std::size_t b) {
  return std::byte(static_cast<std::uint8_t>(from * 131 + to * 31 + b * 7 + (b >> 8) * 3 + 1));
}

// counts[from][to]: elements rank `from` sends rank `to`.
using CountMatrix = std::vector<std::vector<std::size_t>>;

struct Failures {
  std::mutex mutex;
  std::vector<std::string> list;
  void add(std::string s) {
    std::lock_guard lock(mutex);
    if (list.size() < 10) list.push_back(std::move(s));
  }
};

// One alltoallv (or alltoall when every count is `even`) on this rank, checked byte by byte;
// the bytes around `out` must stay untouched.
void run_and_check(Communicator& comm, const CountMatrix& counts, DataType t, bool even,
                   Failures& fails, const std::string& what) {
  const int n = comm.size(), me = comm.rank();
  const std::size_t es = element_size(t);
  std::vector<std::size_t> send(static_cast<std::size_t>(n)), recv(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    send[static_cast<std::size_t>(r)] = counts[static_cast<std::size_t>(me)][static_cast<std::size_t>(r)];
    recv[static_cast<std::size_t>(r)] = counts[static_cast<std::size_t>(r)][static_cast<std::size_t>(me)];
  }
  const std::size_t sent = std::accumulate(send.begin(), send.end(), std::size_t{0}) * es;
  const std::size_t received = std::accumulate(recv.begin(), recv.end(), std::size_t{0}) * es;
  std::vector<std::byte> in(sent + 1), out(received + 2, std::byte{0xee});
  std::size_t at = 0;
  for (int r = 0; r < n; ++r)
    for (std::size_t b = 0; b < send[static_cast<std::size_t>(r)] * es; ++b) in[at++] = pattern(me, r, b);
  if (even)
    comm.alltoall(in.data(), out.data() + 1, send[0], t);
  else
    comm.alltoallv(in.data(), send, out.data() + 1, recv, t);
  at = 1;
  bool ok = out[0] == std::byte{0xee} && out[received + 1] == std::byte{0xee};
  for (int r = 0; r < n && ok; ++r)
    for (std::size_t b = 0; b < recv[static_cast<std::size_t>(r)] * es && ok; ++b)
      ok = out[at++] == pattern(r, me, b);
  if (!ok) fails.add(what + " " + std::string(to_string(t)) + " rank " + std::to_string(me));
}

CountMatrix even_counts(int n, std::size_t count) {
  return CountMatrix(static_cast<std::size_t>(n), std::vector<std::size_t>(static_cast<std::size_t>(n), count));
}

// Uneven, with empty blocks (own block included) and ranks that send nothing at all.
std::vector<CountMatrix> uneven_counts(int n, std::size_t scale) {
  std::vector<CountMatrix> v;
  CountMatrix a = even_counts(n, 0), b = even_counts(n, 0), c = even_counts(n, 0);
  for (int f = 0; f < n; ++f)
    for (int t = 0; t < n; ++t) {
      const auto fi = static_cast<std::size_t>(f), ti = static_cast<std::size_t>(t);
      a[fi][ti] = static_cast<std::size_t>((f * 5 + t * 3) % 7) * scale / 4 + ((f + t) % 3 == 0 ? 0 : 1);
      b[fi][ti] = f == 0 ? 0 : static_cast<std::size_t>(f * 13 + t) * scale / 8;  // rank 0 sends nothing
      c[fi][ti] = t == n - 1 ? scale + static_cast<std::size_t>(f) : 0;  // all to the last rank
    }
  v.push_back(a);
  v.push_back(b);
  v.push_back(c);
  v.push_back(even_counts(n, 0));
  return v;
}

void expect_all_ok(const std::vector<test::RankOutcome>& outcomes, const std::string& what) {
  for (std::size_t r = 0; r < outcomes.size(); ++r)
    EXPECT_TRUE(outcomes[r].ok) << what << ": rank " << r << ": " << outcomes[r].error;
}

TEST(Alltoall, EveryTypeRankCountAndTransport) {
  for (TransportChoice tr : kTransports)
    for (int n : {1, 2, 3, 4}) {
      Failures fails;
      auto outcomes = test::run_ranks(n, options_for(tr), [&](Communicator& comm) {
        for (DataType t : kAllDataTypes)
          for (std::size_t count : {0, 1, 7, 1000})
            run_and_check(comm, even_counts(n, count), t, true, fails,
                          "alltoall " + name(tr) + " count " + std::to_string(count));
      });
      expect_all_ok(outcomes, name(tr) + " " + std::to_string(n) + " ranks");
      for (auto& f : fails.list) ADD_FAILURE() << f;
    }
}

TEST(Alltoallv, EveryTypeRankUnevenAndEmptyBlocksAndTransport) {
  for (TransportChoice tr : kTransports)
    for (int n : {1, 2, 3, 4}) {
      Failures fails;
      auto outcomes = test::run_ranks(n, options_for(tr), [&](Communicator& comm) {
        for (DataType t : kAllDataTypes)
          for (const CountMatrix& m : uneven_counts(n, 97))
            run_and_check(comm, m, t, false, fails, "alltoallv " + name(tr));
      });
      expect_all_ok(outcomes, name(tr) + " " + std::to_string(n) + " ranks");
      for (auto& f : fails.list) ADD_FAILURE() << f;
    }
}

TEST(Alltoall, LargeBlocksWrapTheSharedMemoryRings) {
  for (int n : {2, 3, 4}) {
    Failures fails;
    auto outcomes = test::run_ranks(n, options_for(TransportChoice::shm), [&](Communicator& comm) {
      run_and_check(comm, even_counts(n, (1 << 20) + 3), DataType::float32, true, fails, "alltoall big");
      for (const CountMatrix& m : uneven_counts(n, 1 << 19))
        run_and_check(comm, m, DataType::int16, false, fails, "alltoallv big");
    });
    expect_all_ok(outcomes, "shm " + std::to_string(n) + " ranks");
    for (auto& f : fails.list) ADD_FAILURE() << f;
  }
}

// 2 fake hosts x 2 ranks: shared memory (and single copy) inside a host, TCP across, in one
// call; small and large blocks.
TEST(Alltoall, SharedMemoryInsideFakeHostsTcpAcross) {
  Failures fails;
  auto outcomes = test::run_ranks(4, [](int r) {
    auto o = options_for(TransportChoice::automatic);
    o.host_key = r % 2 ? "odd" : "even";
    return o;
  }, [&](Communicator& comm) {
    if (comm.describe_transports().find("tcp") == std::string::npos ||
        comm.describe_transports().find("shm") == std::string::npos)
      throw std::runtime_error("transports are " + comm.describe_transports());
    for (std::size_t count : {0, 5, 70000})
      run_and_check(comm, even_counts(4, count), DataType::float32, true, fails, "mixed");
    for (const CountMatrix& m : uneven_counts(4, 1 << 14))
      run_and_check(comm, m, DataType::int16, false, fails, "mixed v");
  });
  expect_all_ok(outcomes, "mixed");
  for (auto& f : fails.list) ADD_FAILURE() << f;
}

TEST(Alltoallv, DisagreeingCountsFailOnEveryRankNamingBothRanksAndCounts) {
  for (TransportChoice tr : kTransports) {
    auto outcomes = test::run_ranks(4, options_for(tr, 10s), [](Communicator& comm) {
      const int me = comm.rank();
      std::vector<std::size_t> send(4, 5), recv(4, 5);
      if (me == 1) recv[2] = 6;  // rank 2 sends 5, rank 1 expects 6
      std::vector<float> in(20, 1.0f), out(21, 0.0f);
      comm.alltoallv(in.data(), send, out.data(), recv, DataType::float32);
    });
    for (std::size_t r = 0; r < outcomes.size(); ++r) {
      const auto& o = outcomes[r];
      ASSERT_FALSE(o.ok) << name(tr) << " rank " << r;
      EXPECT_EQ(o.kind, ErrorKind::mismatch) << name(tr) << " rank " << r << ": " << o.error;
      EXPECT_NE(o.error.find("rank 2 sends 5 elements to rank 1, which expects 6"), std::string::npos)
          << name(tr) << " rank " << r << ": " << o.error;
    }
  }
  // Several disagreeing pairs: all ranks name the same first one and count the others.
  auto outcomes = test::run_ranks(3, options_for(TransportChoice::inproc, 10s), [](Communicator& comm) {
    std::vector<std::size_t> send(3, 2), recv(3, 2);
    if (comm.rank() == 0) send = {2, 4, 9};
    std::vector<std::int8_t> in(20), out(20);
    comm.alltoallv(in.data(), send, out.data(), recv, DataType::int8);
  });
  for (const auto& o : outcomes) {
    ASSERT_FALSE(o.ok);
    EXPECT_EQ(o.kind, ErrorKind::mismatch) << o.error;
    EXPECT_NE(o.error.find("rank 0 sends 4 elements to rank 1, which expects 2 from rank 0 (and 1 "
                           "more pairs disagree)"),
              std::string::npos)
        << o.error;
  }
}

TEST(Alltoall, DisagreeingCountsOrTypesFailOnEveryRank) {
  auto outcomes = test::run_ranks(3, test::inproc_options(5s), [](Communicator& comm) {
    std::vector<double> in(30), out(30);
    comm.alltoall(in.data(), out.data(), comm.rank() == 2 ? 3 : 2, DataType::float64);
  });
  for (const auto& o : outcomes) EXPECT_FALSE(o.ok);
  outcomes = test::run_ranks(2, test::inproc_options(5s), [](Communicator& comm) {
    std::vector<std::int16_t> in(8), out(8);
    comm.alltoall(in.data(), out.data(), 2, comm.rank() == 0 ? DataType::int16 : DataType::float16);
  });
  for (const auto& o : outcomes) {
    ASSERT_FALSE(o.ok);
    EXPECT_TRUE(o.kind == ErrorKind::mismatch || o.kind == ErrorKind::peer_failed) << o.error;
  }
}

TEST(Alltoall, BadArgumentsAreRefusedAndLeaveTheCommunicatorUsable) {
  auto outcomes = test::run_ranks(2, test::inproc_options(5s), [](Communicator& comm) {
    std::vector<float> buf(8, 1.0f), out(8);
    auto refused = [](auto&& call) {
      try {
        call();
        throw std::runtime_error("not refused");
      } catch (const CollectiveError& e) {
        if (e.kind() != ErrorKind::invalid_argument) throw;
      }
    };
    refused([&] { comm.alltoall(buf.data(), buf.data() + 1, 2, DataType::float32); });  // overlap
    refused([&] { comm.alltoall(nullptr, out.data(), 2, DataType::float32); });
    const std::size_t two[] = {2, 2}, three[] = {2, 2, 2};
    refused([&] { comm.alltoallv(buf.data(), three, out.data(), two, DataType::float32); });
    refused([&] { comm.alltoallv(buf.data(), two, buf.data() + 2, two, DataType::float32); });
    comm.alltoall(buf.data(), out.data(), 4, DataType::float32);
    if (out[7] != 1.0f) throw std::runtime_error("wrong after refusals");
  });
  expect_all_ok(outcomes, "refusals");
}

// The single-copy read behind large shared-memory blocks, from a child process that holds the
// same memory (fork): it copies only with the right check value, from a live process and mapped
// memory, and says so otherwise; a pid whose check matched is trusted without it for a while.
TEST(SingleCopy, ReadsOnlyWithTheRightCheckFromALiveProcess) {
  std::vector<std::byte> block(300000), into(300000);
  for (std::size_t i = 0; i < block.size(); ++i) block[i] = std::byte(static_cast<std::uint8_t>(i * 7));
  const std::uint64_t check = single_copy_check();
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(child, 0);
  SingleCopyOffer offer{reinterpret_cast<std::uintptr_t>(block.data()), block.size(),
                        reinterpret_cast<std::uintptr_t>(&check), check};
  SingleCopyOffer wrong = offer;
  wrong.check = check + 1;
  EXPECT_FALSE(single_copy_read(child, wrong, into.data()));
  ASSERT_TRUE(single_copy_read(child, offer, into.data()));
  EXPECT_EQ(block, into);
  EXPECT_TRUE(single_copy_read(child, wrong, into.data()));  // trusted now
  SingleCopyOffer unmapped = offer;
  unmapped.address = 8;
  EXPECT_FALSE(single_copy_read(child, unmapped, into.data()));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(single_copy_read(child, offer, into.data()));
  EXPECT_FALSE(single_copy_read(0x3fffffff, offer, into.data()));  // no such process
}

// Publishes a pid no process has for this rank, so the others' single-copy reads from it are
// refused: they must fall back to the ordinary path and still get every byte right.
class WrongPidRendezvous : public InMemoryRendezvous {
 public:
  using InMemoryRendezvous::InMemoryRendezvous;
  void put(std::string_view key, const std::vector<std::byte>& value) override {
    std::string v(reinterpret_cast<const char*>(value.data()), value.size());
    if (key.ends_with("/host")) {  // host, key, pid, cpus: one a line
      const auto pid_at = v.find('\n', v.find('\n') + 1) + 1;
      v = v.substr(0, pid_at) + "1073741823" + v.substr(v.find('\n', pid_at));
    }
    const auto* p = reinterpret_cast<const std::byte*>(v.data());
    InMemoryRendezvous::put(key, std::vector<std::byte>(p, p + v.size()));
  }
};

TEST(Alltoall, RefusedSingleCopyReadsFallBackToTheOrdinaryPath) {
  for (int n : {2, 3}) {
    Failures fails;
    auto outcomes = test::run_ranks(
        n, [](int) { return options_for(TransportChoice::shm); },
        [&](Communicator& comm) {
          run_and_check(comm, even_counts(n, 1 << 16), DataType::float32, true, fails, "refused");
          for (const CountMatrix& m : uneven_counts(n, 1 << 15))
            run_and_check(comm, m, DataType::int8, false, fails, "refused v");
        },
        [](std::shared_ptr<InMemoryRendezvousHub> hub, int r) -> std::unique_ptr<Rendezvous> {
          if (r == 1) return std::make_unique<WrongPidRendezvous>(std::move(hub), r);
          return std::make_unique<InMemoryRendezvous>(std::move(hub), r);
        });
    expect_all_ok(outcomes, std::to_string(n) + " ranks");
    for (auto& f : fails.list) ADD_FAILURE() << f;
  }
}

// A C rendezvous over the in-memory one, so the C API runs with several ranks.
riseml_rendezvous c_rendezvous(InMemoryRendezvous& r) {
  riseml_rendezvous c{};
  c.user = &r;
  c.rank = r.rank();
  c.size = r.size();
  c.put = [](void* u, const char* k, const void* v, size_t n) {
    auto* p = static_cast<const std::byte*>(v);
    static_cast<InMemoryRendezvous*>(u)->put(k, std::vector<std::byte>(p, p + n));
    return 0;
  };
  c.fence = [](void* u, long ms) {
    try {
      static_cast<InMemoryRendezvous*>(u)->fence(std::chrono::milliseconds(ms));
      return 0;
    } catch (...) {
      return 1;
    }
  };
  c.get = [](void* u, int rank, const char* k, void* v, size_t cap, size_t* n, long ms) {
    try {
      auto value = static_cast<InMemoryRendezvous*>(u)->get(rank, k, std::chrono::milliseconds(ms));
      *n = value.size();
      std::memcpy(v, value.data(), std::min(cap, value.size()));
      return 0;
    } catch (...) {
      return 1;
    }
  };
  c.job_secret = [](void* u, void* v, size_t cap, size_t* n) {
    auto s = static_cast<InMemoryRendezvous*>(u)->job_secret();
    *n = s.size();
    std::memcpy(v, s.data(), std::min(cap, s.size()));
    return 0;
  };
  return c;
}

TEST(CApi, ReduceScattervAlltoallAndAlltoallvWithSeveralRanks) {
  constexpr int n = 3;
  auto hub = std::make_shared<InMemoryRendezvousHub>(n);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int me = 0; me < n; ++me)
    threads.emplace_back([&, me] {
      std::string& err = errors[static_cast<std::size_t>(me)];
      InMemoryRendezvous r(hub, me);
      const riseml_rendezvous cr = c_rendezvous(r);
      riseml_comm* comm = nullptr;
      if (riseml_comm_create(&cr, &comm) != RISEML_OK) {
        err = std::string("create: ") + riseml_last_error();
        return;
      }
      // reduce_scatterv of int16: rank r gets counts[r] elements, each the sum over ranks.
      const size_t counts[n] = {2, 0, 3};
      std::int16_t in[5], out[3] = {};
      for (int i = 0; i < 5; ++i) in[i] = static_cast<std::int16_t>(100 * me + i);
      if (riseml_reduce_scatterv(comm, in, out, counts, RISEML_INT16, RISEML_SUM) != RISEML_OK)
        err += std::string("reduce_scatterv: ") + riseml_last_error() + "; ";
      const int first = me == 0 ? 0 : 2;  // rank 1's block is empty
      for (std::size_t i = 0; i < counts[me]; ++i)
        if (out[i] != static_cast<std::int16_t>(300 + 3 * (first + static_cast<int>(i))))
          err += "reduce_scatterv wrong; ";
      // bool or, and the refused average.
      std::uint8_t b_in[3] = {static_cast<std::uint8_t>(me == 1), 0, 1}, b_out[3] = {};
      const size_t ones[n] = {1, 1, 1};
      if (riseml_reduce_scatterv(comm, b_in, b_out, ones, RISEML_BOOL, RISEML_MAX) != RISEML_OK ||
          b_out[0] != (me == 0 ? 1 : me == 1 ? 0 : 1))
        err += "bool reduce_scatterv wrong; ";
      if (riseml_reduce_scatterv(comm, b_in, b_out, ones, RISEML_BOOL, RISEML_AVERAGE) !=
          RISEML_ERR_INVALID_ARGUMENT)
        err += "bool average not refused; ";
      // alltoall of int8.
      std::int8_t a_in[2 * n], a_out[2 * n] = {};
      for (int i = 0; i < 2 * n; ++i) a_in[i] = static_cast<std::int8_t>(10 * me + i);
      if (riseml_alltoall(comm, a_in, a_out, 2, RISEML_INT8) != RISEML_OK)
        err += std::string("alltoall: ") + riseml_last_error() + "; ";
      for (int r = 0; r < n; ++r)
        for (int j = 0; j < 2; ++j)
          if (a_out[2 * r + j] != static_cast<std::int8_t>(10 * r + 2 * me + j)) err += "alltoall wrong; ";
      // alltoallv where rank 0 lies about what it expects from rank 2: a mismatch everywhere.
      size_t send[n] = {1, 1, 1}, recv[n] = {1, 1, 1};
      if (me == 0) recv[2] = 4;
      float f_in[n] = {1, 2, 3}, f_out[6] = {};
      const riseml_status s = riseml_alltoallv(comm, f_in, send, f_out, recv, RISEML_FLOAT32);
      if (s != RISEML_ERR_MISMATCH)
        err += std::string("alltoallv mismatch gave ") + riseml_status_name(s) + ": " + riseml_last_error();
      else if (std::string(riseml_last_error()).find("rank 2 sends 1 elements to rank 0, which expects 4") ==
               std::string::npos)
        err += std::string("alltoallv mismatch says ") + riseml_last_error();
      riseml_comm_destroy(comm);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
  EXPECT_EQ(riseml_alltoall(nullptr, nullptr, nullptr, 1, RISEML_INT8), RISEML_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(riseml_reduce_scatterv(nullptr, nullptr, nullptr, nullptr, RISEML_BOOL, RISEML_SUM),
            RISEML_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace riseml
