// CommunicatorOptions: from_environment() is the one place the core reads its RISEML_*
// variables (each parsed, each malformed value refused with its message), and the values reach
// the core through the options alone.
#include <gtest/gtest.h>

#include <riseml/communicator.hpp>
#include <riseml/half_float.hpp>
#include <riseml/reduce_kernels.hpp>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rank_threads.hpp"

namespace riseml {
namespace {

using namespace std::chrono_literals;

constexpr const char* kVariables[] = {"RISEML_TIMEOUT_S",
                                      "RISEML_ALGORITHM",
                                      "RISEML_TRANSPORT",
                                      "RISEML_IFACE",
                                      "RISEML_TCP_CONNECTIONS",
                                      "RISEML_HALF_REDUCE",
                                      "RISEML_HOST_KEY",
                                      "RISEML_SMALL_BYTES",
                                      "RISEML_DIRECT_BYTES",
                                      "RISEML_SHM_SLOTS",
                                      "RISEML_SHM_SLOT_KIB",
                                      "RISEML_SPIN_US",
                                      "RISEML_RING_CHUNK_KIB",
                                      "RISEML_SINGLE_COPY_BYTES",
                                      "RISEML_STREAMING_STORES",
                                      "RISEML_KERNELS"};

// Every variable unset for the test, as it was afterwards.
class OptionsFromEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVariables) {
      if (const char* v = std::getenv(name)) saved_[name] = v;
      ::unsetenv(name);
    }
  }
  void TearDown() override {
    for (const char* name : kVariables) ::unsetenv(name);
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  static void set(const char* name, const char* value) { ::setenv(name, value, 1); }

  // The message from_environment() refuses `name`=`value` with ("" if it accepts it).
  static std::string refusal(const char* name, const char* value) {
    set(name, value);
    try {
      CommunicatorOptions::from_environment();
    } catch (const CollectiveError& e) {
      ::unsetenv(name);
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      return e.what();
    }
    ::unsetenv(name);
    return "";
  }

 private:
  std::map<std::string, std::string> saved_;
};

TEST_F(OptionsFromEnvironment, NothingSetGivesTheDefaults) {
  const CommunicatorOptions o = CommunicatorOptions::from_environment();
  const CommunicatorOptions d;
  EXPECT_EQ(o.timeout, 60s);
  EXPECT_EQ(o.algorithm, Algorithm::automatic);
  EXPECT_EQ(o.transport, TransportChoice::automatic);
  EXPECT_EQ(o.iface, "");
  EXPECT_EQ(o.tcp_connections, 1);
  EXPECT_EQ(o.half_reduce, HalfReduce::wire);
  EXPECT_EQ(o.host_key, "");
  EXPECT_EQ(o.small_message_bytes, 64u << 10);
  EXPECT_EQ(o.shm_slots, 8);
  EXPECT_EQ(o.shm_slot_kib, 0) << "automatic";
  EXPECT_FALSE(o.spin_time.has_value()) << "automatic";
  EXPECT_EQ(o.ring_chunk_kib, 512u);
  EXPECT_FALSE(o.single_copy_bytes.has_value()) << "automatic";
  EXPECT_TRUE(o.streaming_stores);
  EXPECT_EQ(o.kernels, KernelChoice::automatic);
  // The defaults of a default-constructed CommunicatorOptions are the same.
  EXPECT_EQ(d.timeout, o.timeout);
  EXPECT_EQ(d.small_message_bytes, o.small_message_bytes);
  EXPECT_EQ(d.shm_slots, o.shm_slots);
  EXPECT_EQ(d.shm_slot_kib, o.shm_slot_kib);
  EXPECT_EQ(d.spin_time, o.spin_time);
  EXPECT_EQ(d.ring_chunk_kib, o.ring_chunk_kib);
  EXPECT_EQ(d.single_copy_bytes, o.single_copy_bytes);
  EXPECT_EQ(d.streaming_stores, o.streaming_stores);
  EXPECT_EQ(d.kernels, o.kernels);
}

TEST_F(OptionsFromEnvironment, ReadsEveryVariable) {
  set("RISEML_TIMEOUT_S", "7");
  set("RISEML_ALGORITHM", "hd");
  set("RISEML_TRANSPORT", "tcp");
  set("RISEML_IFACE", "lo");
  set("RISEML_TCP_CONNECTIONS", "3");
  set("RISEML_HALF_REDUCE", "float32");
  set("RISEML_HOST_KEY", "fake-host-1");
  set("RISEML_SMALL_BYTES", "1000");
  set("RISEML_DIRECT_BYTES", "0");
  set("RISEML_SHM_SLOTS", "4");
  set("RISEML_SHM_SLOT_KIB", "32");
  set("RISEML_SPIN_US", "0");
  set("RISEML_RING_CHUNK_KIB", "64");
  set("RISEML_SINGLE_COPY_BYTES", "4096");
  set("RISEML_STREAMING_STORES", "0");
  set("RISEML_KERNELS", "generic");
  const CommunicatorOptions o = CommunicatorOptions::from_environment();
  EXPECT_EQ(o.timeout, 7s);
  EXPECT_EQ(o.algorithm, Algorithm::halving_doubling);
  EXPECT_EQ(o.transport, TransportChoice::tcp);
  EXPECT_EQ(o.iface, "lo");
  EXPECT_EQ(o.tcp_connections, 3);
  EXPECT_EQ(o.half_reduce, HalfReduce::float32);
  EXPECT_EQ(o.host_key, "fake-host-1");
  EXPECT_EQ(o.small_message_bytes, 1000u);
  EXPECT_EQ(o.direct_bytes, 0u);
  EXPECT_EQ(o.shm_slots, 4);
  EXPECT_EQ(o.shm_slot_kib, 32);
  EXPECT_EQ(o.spin_time, std::optional(0us));
  EXPECT_EQ(o.ring_chunk_kib, 64u);
  EXPECT_EQ(o.single_copy_bytes, std::optional<std::size_t>(4096));
  EXPECT_FALSE(o.streaming_stores);
  EXPECT_EQ(o.kernels, KernelChoice::generic);
}

TEST_F(OptionsFromEnvironment, EveryNameOfAnEnumeratedValue) {
  const std::vector<std::pair<const char*, Algorithm>> algorithms = {
      {"auto", Algorithm::automatic},
      {"ring", Algorithm::ring},
      {"halving_doubling", Algorithm::halving_doubling},
      {"hd", Algorithm::halving_doubling},
      {"hierarchical", Algorithm::hierarchical},
      {"direct", Algorithm::direct}};
  for (const auto& [name, a] : algorithms) {
    set("RISEML_ALGORITHM", name);
    EXPECT_EQ(CommunicatorOptions::from_environment().algorithm, a) << name;
  }
  const std::vector<std::pair<const char*, TransportChoice>> transports = {
      {"auto", TransportChoice::automatic},
      {"shm", TransportChoice::shm},
      {"tcp", TransportChoice::tcp},
      {"inproc", TransportChoice::inproc}};
  for (const auto& [name, t] : transports) {
    set("RISEML_TRANSPORT", name);
    EXPECT_EQ(CommunicatorOptions::from_environment().transport, t) << name;
  }
  set("RISEML_HALF_REDUCE", "wire");
  EXPECT_EQ(CommunicatorOptions::from_environment().half_reduce, HalfReduce::wire);
}

TEST_F(OptionsFromEnvironment, MalformedValuesAreRefusedNamingTheVariableAndWhatItTakes) {
  EXPECT_EQ(refusal("RISEML_TIMEOUT_S", "0"),
            "RISEML_TIMEOUT_S=0: expected a whole number from 1 to 604800");
  EXPECT_EQ(refusal("RISEML_TIMEOUT_S", "10s"),
            "RISEML_TIMEOUT_S=10s: expected a whole number from 1 to 604800");
  EXPECT_EQ(refusal("RISEML_ALGORITHM", "tree"),
            "RISEML_ALGORITHM=tree: expected auto, ring, halving_doubling (hd), hierarchical or direct");
  EXPECT_EQ(refusal("RISEML_TRANSPORT", "ib"),
            "RISEML_TRANSPORT=ib: expected auto, shm, tcp or inproc");
  EXPECT_EQ(refusal("RISEML_TCP_CONNECTIONS", "17"),
            "RISEML_TCP_CONNECTIONS=17: expected a whole number from 1 to 16");
  EXPECT_EQ(refusal("RISEML_HALF_REDUCE", "fp32"),
            "RISEML_HALF_REDUCE=fp32: expected wire (16 bits on the wire, rounded every step) or "
            "float32 (accumulated in float32, rounded once)");
  EXPECT_EQ(refusal("RISEML_SMALL_BYTES", "-1"),
            "RISEML_SMALL_BYTES=-1: expected a whole number from 0 to 1099511627776");
  EXPECT_EQ(refusal("RISEML_SHM_SLOTS", "1"),
            "RISEML_SHM_SLOTS=1: expected a whole number from 2 to 1024");
  EXPECT_EQ(refusal("RISEML_SHM_SLOT_KIB", "2"),
            "RISEML_SHM_SLOT_KIB=2: expected a whole number from 4 to 65536");
  EXPECT_EQ(refusal("RISEML_SPIN_US", "fast"),
            "RISEML_SPIN_US=fast: expected a whole number from 0 to 1000000");
}

// These have always been read leniently; they keep their meaning.
TEST_F(OptionsFromEnvironment, TheLenientKnobsKeepTheirMeaning) {
  set("RISEML_RING_CHUNK_KIB", "0");
  EXPECT_EQ(CommunicatorOptions::from_environment().ring_chunk_kib, 0u) << "chunking off";
  set("RISEML_RING_CHUNK_KIB", "");
  EXPECT_EQ(CommunicatorOptions::from_environment().ring_chunk_kib, 0u) << "empty: chunking off";
  ::unsetenv("RISEML_RING_CHUNK_KIB");
  set("RISEML_SINGLE_COPY_BYTES", "0");
  EXPECT_EQ(CommunicatorOptions::from_environment().single_copy_bytes,
            std::optional<std::size_t>(0))
      << "0: never";
  set("RISEML_SINGLE_COPY_BYTES", "");
  EXPECT_FALSE(CommunicatorOptions::from_environment().single_copy_bytes.has_value())
      << "empty: automatic";
  set("RISEML_STREAMING_STORES", "1");
  EXPECT_TRUE(CommunicatorOptions::from_environment().streaming_stores);
  set("RISEML_KERNELS", "avx2");
  EXPECT_EQ(CommunicatorOptions::from_environment().kernels, KernelChoice::automatic)
      << "only generic forces anything";
  set("RISEML_HOST_KEY", "");
  EXPECT_EQ(CommunicatorOptions::from_environment().host_key, "") << "empty: hostname + boot id";
}

// The options, not the environment, steer the core: values the core used to read itself, some
// of them malformed (which would throw if anything but from_environment() read them).
TEST_F(OptionsFromEnvironment, TheCoreReadsNoneOfThem) {
  set("RISEML_SMALL_BYTES", "1099511627776");
  set("RISEML_SHM_SLOTS", "1");
  set("RISEML_SHM_SLOT_KIB", "2");
  set("RISEML_SPIN_US", "fast");
  CommunicatorOptions o;
  o.transport = TransportChoice::shm;
  o.timeout = 30s;
  auto outcomes = test::run_ranks(2, o, [](Communicator& comm) {
    EXPECT_EQ(comm.algorithm_for(1 << 20), Algorithm::ring) << "RISEML_SMALL_BYTES was read";
    std::vector<float> x(1 << 16, 1.0f);
    comm.allreduce(x.data(), x.data(), x.size(), DataType::float32, ReduceOp::sum);
    EXPECT_EQ(x.back(), 2.0f);
  });
  for (const auto& r : outcomes) EXPECT_TRUE(r.ok) << r.error;
}

TEST(CommunicatorOptions, SmallMessageBytesSteersTheAutomaticAlgorithm) {
  auto o = test::inproc_options();
  o.direct_bytes = 0;
  auto outcomes = test::run_ranks(2, o, [](Communicator& comm) {
    EXPECT_EQ(comm.algorithm_for(100 << 10), Algorithm::ring);
    EXPECT_EQ(comm.algorithm_for(1 << 10), Algorithm::halving_doubling);
  });
  for (const auto& r : outcomes) EXPECT_TRUE(r.ok) << r.error;
  o.small_message_bytes = 1 << 20;
  outcomes = test::run_ranks(2, o, [](Communicator& comm) {
    EXPECT_EQ(comm.algorithm_for(100 << 10), Algorithm::halving_doubling);
  });
  for (const auto& r : outcomes) EXPECT_TRUE(r.ok) << r.error;
}

TEST(CommunicatorOptions, DirectBytesSteersTheAutomaticAlgorithm) {
  auto o = test::inproc_options();
  for (int n : {2, 3, 5, 16}) {
    auto outcomes = test::run_ranks(n, o, [n](Communicator& comm) {
      // One peer: twice the budget (the direct step moves no more bytes than the ring).
      const std::size_t most = (24u << 10) * (n == 2 ? 2 : 1) / static_cast<std::size_t>(n - 1);
      EXPECT_EQ(comm.algorithm_for(most), Algorithm::direct) << n;
      EXPECT_EQ(comm.algorithm_for(most + 1), Algorithm::halving_doubling) << n;
    });
    for (const auto& r : outcomes) EXPECT_TRUE(r.ok) << r.error;
  }
  // 17 ranks never take it by themselves; ranks on two hosts do.
  auto outcomes = test::run_ranks(17, o, [](Communicator& comm) {
    EXPECT_EQ(comm.algorithm_for(64), Algorithm::halving_doubling);
  });
  for (const auto& r : outcomes) EXPECT_TRUE(r.ok) << r.error;
  outcomes = test::run_ranks(
      4, [&](int r) { auto x = o; x.host_key = r < 2 ? "a" : "b"; return x; },
      [](Communicator& comm) { EXPECT_EQ(comm.algorithm_for(64), Algorithm::direct); });
  for (const auto& r : outcomes) EXPECT_TRUE(r.ok) << r.error;
}

// Process-wide and one-way (reduce_kernels.hpp): tests that run after it in the same process use
// the generic loops, which give the same bits (ctest runs each test in a process of its own).
TEST(CommunicatorOptions, GenericKernelsApplyOnceACommunicatorIsCreated) {
  auto o = test::inproc_options();
  o.kernels = KernelChoice::generic;
  auto outcomes = test::run_ranks(1, o, [](Communicator& comm) {
    float x[3] = {1, 2, 3};
    comm.allreduce(x, x, 3, DataType::float32, ReduceOp::sum);
    EXPECT_EQ(x[2], 3.0f);
  });
  for (const auto& r : outcomes) EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(kernels::active_isa(), kernels::Isa::generic);
}

// Ranks that disagree on a value that shapes the messages fail as a mismatch: proof that each
// rank's own options decide. Every rank fails; at least one finds the mismatch (the others may
// hear of it from that one first).
void expect_a_mismatch(const std::vector<test::RankOutcome>& outcomes) {
  bool mismatch = false;
  for (const auto& r : outcomes) {
    EXPECT_FALSE(r.ok);
    mismatch = mismatch || r.kind == ErrorKind::mismatch;
  }
  EXPECT_TRUE(mismatch) << outcomes[0].error << " / " << outcomes[1].error;
}

TEST(CommunicatorOptions, RanksThatDisagreeOnTheRingChunksFailAsAMismatch) {
  auto outcomes = test::run_ranks(
      2,
      [](int r) {
        CommunicatorOptions o;
        o.transport = TransportChoice::shm;
        o.timeout = 10s;
        o.ring_chunk_kib = r == 0 ? 0 : 16;
        return o;
      },
      [](Communicator& comm) {
        std::vector<float> x(1 << 18, 1.0f);
        comm.allreduce(x.data(), x.data(), x.size(), DataType::float32, ReduceOp::sum,
                       Algorithm::ring);
      });
  expect_a_mismatch(outcomes);
}

TEST(CommunicatorOptions, RanksThatDisagreeOnSingleCopyFailAsAMismatch) {
  auto outcomes = test::run_ranks(
      2,
      [](int r) {
        CommunicatorOptions o;
        o.transport = TransportChoice::shm;
        o.timeout = 10s;
        o.single_copy_bytes = r == 0 ? 0 : 1;  // never / always
        return o;
      },
      [](Communicator& comm) {
        std::vector<std::int32_t> in(2 << 14, comm.rank()), out(in.size());
        comm.alltoall(in.data(), out.data(), in.size() / 2, DataType::int32);
      });
  expect_a_mismatch(outcomes);
}

// Shared memory with two slots of 4 KiB and the 2-rank ring chunked every 4 KiB a rank: a few
// hundred KB run every pipelined path (the chunked ring at 2 ranks).
CommunicatorOptions small_chunked_shm() {
  CommunicatorOptions o;
  o.transport = TransportChoice::shm;
  o.timeout = 30s;
  o.shm_slots = 2;
  o.shm_slot_kib = 4;
  o.ring_chunk_kib = 4;
  return o;
}

// Small shared-memory rings, chunked rings, no spin and no streaming still give exact results.
TEST(CommunicatorOptions, TheTuningKnobsKeepResultsExact) {
  CommunicatorOptions o = small_chunked_shm();
  o.spin_time = 0us;
  o.streaming_stores = false;
  o.single_copy_bytes = 1;
  for (int n : {2, 3}) {
    auto outcomes = test::run_ranks(n, o, [n](Communicator& comm) {
      std::vector<std::int64_t> x(100000);
      for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = static_cast<std::int64_t>(i) * (comm.rank() + 1);
      comm.allreduce(x.data(), x.data(), x.size(), DataType::int64, ReduceOp::sum);
      const std::int64_t ranks_sum = n * (n + 1) / 2;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (x[i] != static_cast<std::int64_t>(i) * ranks_sum) {
          ADD_FAILURE() << n << " ranks, element " << i << ": " << x[i];
          break;
        }
      std::vector<std::int32_t> in(static_cast<std::size_t>(n) * 20000), out(in.size());
      for (std::size_t i = 0; i < in.size(); ++i)
        in[i] = comm.rank() * 1000000 + static_cast<std::int32_t>(i);
      comm.alltoall(in.data(), out.data(), 20000, DataType::int32);
      for (int from = 0; from < n; ++from)
        for (std::size_t k = 0; k < 20000; ++k) {
          const std::size_t at = static_cast<std::size_t>(from) * 20000 + k;
          const auto want = from * 1000000 + static_cast<std::int32_t>(comm.rank() * 20000 + k);
          if (out[at] != want) {
            ADD_FAILURE() << n << " ranks, alltoall from " << from << " element " << k;
            return;
          }
        }
    });
    for (const auto& r : outcomes) EXPECT_TRUE(r.ok) << r.error;
  }
}

// An average divides each element once, where the algorithm completes it (the ring: a rank's own
// block in its last reduce-scatter step, in the chunked ring too): the bits of the sum divided
// afterwards, for float32, float16 and int64, by 2 and 3 ranks over the chunked and plain ring,
// halving-doubling and direct.
TEST(CommunicatorOptions, AnAverageDividesOnceOnEveryPath) {
  const CommunicatorOptions o = small_chunked_shm();
  constexpr std::size_t kCount = 100000;  // 2 ranks: the chunked ring
  for (int n : {2, 3}) {
    auto outcomes = test::run_ranks(n, o, [n](Communicator& comm) {
      const int ranks_sum = n * (n + 1) / 2;
      for (Algorithm algo : {Algorithm::ring, Algorithm::halving_doubling, Algorithm::direct}) {
        std::vector<float> f(kCount), f_want(kCount);
        std::vector<std::uint16_t> h(kCount), h_want(kCount);
        std::vector<std::int64_t> q(kCount), q_want(kCount);
        for (std::size_t i = 0; i < kCount; ++i) {
          const auto v = static_cast<int>(i % 4096), small = static_cast<int>(i % 64);
          f[i] = static_cast<float>(v * (comm.rank() + 1));
          f_want[i] = static_cast<float>(v * ranks_sum);
          h[i] = kernels::float_to_float16(static_cast<float>(small * (comm.rank() + 1)));
          h_want[i] = kernels::float_to_float16(static_cast<float>(small * ranks_sum));
          q[i] = static_cast<std::int64_t>(i) * (comm.rank() + 1) - 7;
          q_want[i] = static_cast<std::int64_t>(i) * ranks_sum - 7 * n;
        }
        kernels::divide(DataType::float32, f_want.data(), kCount, n);
        kernels::divide(DataType::float16, h_want.data(), kCount, n);
        kernels::divide(DataType::int64, q_want.data(), kCount, n);
        comm.allreduce(f.data(), f.data(), kCount, DataType::float32, ReduceOp::average, algo);
        comm.allreduce(h.data(), h.data(), kCount, DataType::float16, ReduceOp::average, algo);
        comm.allreduce(q.data(), q.data(), kCount, DataType::int64, ReduceOp::average, algo);
        const std::string what = std::string(to_string(algo)) + ", " + std::to_string(n) + " ranks, rank " +
                                 std::to_string(comm.rank());
        EXPECT_TRUE(f == f_want) << "float32 " << what;
        EXPECT_TRUE(h == h_want) << "float16 " << what;
        EXPECT_TRUE(q == q_want) << "int64 " << what;
      }
    });
    for (const auto& r : outcomes) EXPECT_TRUE(r.ok) << r.error;
  }
}

}  // namespace
}  // namespace riseml
