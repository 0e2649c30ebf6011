// The engine with GPU tensors (device_path_cuda.cpp + GpuCollectives), ranks as threads of this
// process. On a machine with one GPU, two ranks can share it only in hierarchical mode with one
// rank per (fake) host: each NCCL communicator then has one rank, and the cross-host step runs
// over the CPU transport. Tests that need more devices skip with the reason.
// The engine reads no environment variable (EngineOptions::from_environment() does, at the
// edge): a test chooses the algorithm in the EngineOptions it builds the engine with.
#include <riseml/cuda/gpu_collectives.hpp>
#include <riseml/engine/engine.hpp>
#include <riseml/in_memory_rendezvous.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

#include "gpu_test_util.hpp"

namespace riseml::cuda {
namespace {

using engine::Engine;
using engine::EngineOptions;
using engine::Handle;
using engine::Request;
using testing::DeviceBuffer;

// Sets an environment variable for the test's lifetime.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

struct Ranks {
  int n = 1;
  std::function<std::string(int)> host_key = [](int) { return std::string(); };
  EngineOptions options{};
};

EngineOptions with_algorithm(GpuAlgorithm algorithm) {
  EngineOptions o;
  o.gpu.algorithm = algorithm;
  return o;
}

// Every rank its own fake host, hierarchical: two ranks can share one GPU (one NCCL
// communicator per host, of one rank each).
Ranks fake_hosts_hierarchical(int n) {
  return {n, [](int r) { return "fake-host-" + std::to_string(r); },
          with_algorithm(GpuAlgorithm::hierarchical)};
}

void run_engines(const Ranks& ranks, const std::function<void(Engine&, int)>& body) {
  auto hub = std::make_shared<InMemoryRendezvousHub>(ranks.n);
  std::vector<std::string> errors(static_cast<std::size_t>(ranks.n));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks.n; ++r) {
    threads.emplace_back([&, r] {
      try {
        InMemoryRendezvous rendezvous(hub, r);
        CommunicatorOptions o;
        o.transport = TransportChoice::inproc;
        o.timeout = std::chrono::seconds(30);
        o.host_key = ranks.host_key(r);
        Engine engine(rendezvous, o, ranks.options);
        body(engine, r);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < ranks.n; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
}

Handle device_allreduce(Engine& e, const std::string& name, std::vector<DeviceBuffer*> buffers,
                        std::size_t count, DataType type, ReduceOp op, int device,
                        double prescale = 1.0, double postscale = 1.0) {
  Request r;
  r.name = name;
  r.dtype = type;
  r.op = op;
  r.prescale = prescale;
  r.postscale = postscale;
  for (DeviceBuffer* b : buffers)
    r.tensors.push_back({b->get(), b->get(), {static_cast<std::int64_t>(count)}, device});
  return e.enqueue(std::move(r));
}

std::vector<float> pattern(int rank, std::size_t count, int salt) {
  std::vector<float> v(count);
  for (std::size_t i = 0; i < count; ++i)
    v[i] = static_cast<float>((i * 7 + static_cast<std::size_t>(salt)) % 13) + 0.25f * static_cast<float>(rank);
  return v;
}

TEST(GpuHierarchicalSplit, ShardsAndRemainder) {
  EXPECT_EQ(HierarchicalSplit::of(10, 4).shard, 2u);
  EXPECT_EQ(HierarchicalSplit::of(10, 4).remainder, 2u);
  EXPECT_EQ(HierarchicalSplit::of(3, 4).shard, 0u);
  EXPECT_EQ(HierarchicalSplit::of(3, 4).remainder, 3u);
  EXPECT_EQ(HierarchicalSplit::of(8, 1).shard, 8u);
  EXPECT_EQ(HierarchicalSplit::of(8, 1).remainder, 0u);
}

TEST(GpuOptionsTest, FromEnvironment) {
  {
    ScopedEnv a("RISEML_GPU_ALGORITHM", "hierarchical");
    EXPECT_EQ(GpuOptions::from_environment().algorithm, GpuAlgorithm::hierarchical);
  }
  {
    ScopedEnv h("HOROVOD_HIERARCHICAL_ALLREDUCE", "1");
    EXPECT_EQ(GpuOptions::from_environment().algorithm, GpuAlgorithm::hierarchical);
    ScopedEnv a("RISEML_GPU_ALGORITHM", "nccl");  // ours wins
    EXPECT_EQ(GpuOptions::from_environment().algorithm, GpuAlgorithm::flat);
  }
  ScopedEnv bad("RISEML_GPU_ALGORITHM", "ring");
  try {
    GpuOptions::from_environment();
    ADD_FAILURE() << "RISEML_GPU_ALGORITHM=ring accepted";
  } catch (const CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("expected nccl"), std::string::npos) << e.what();
  }
}

// One rank: fused (three tensors, one launch each way) and in-place single tensors, with
// prescale/postscale and average, in float32 and float16; broadcast and allgather.
TEST(EngineGpu, OneRankFusedAndSingleTensors) {
  RISEML_SKIP_WITHOUT_GPU();
  run_engines({}, [](Engine& e, int) {
    const std::size_t n = 1000;
    DeviceBuffer a(n * 4), b(n * 4), c(n * 4);
    a.upload(pattern(0, n, 1));
    b.upload(pattern(0, n, 2));
    c.upload(pattern(0, n, 3));
    device_allreduce(e, "fused", {&a, &b, &c}, n, DataType::float32, ReduceOp::sum, 0, 0.5, 4.0)
        .wait();
    for (auto [buf, salt] : {std::pair{&a, 1}, {&b, 2}, {&c, 3}}) {
      const auto want = pattern(0, n, salt);
      const auto got = buf->download<float>(n);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i] * 0.5f * 4.0f) << i;
    }
    DeviceBuffer single(n * 4);
    single.upload(pattern(0, n, 5));
    device_allreduce(e, "single", {&single}, n, DataType::float32, ReduceOp::average, 0).wait();
    EXPECT_EQ(single.download<float>(n), pattern(0, n, 5));

    // float16: 1.5 * prescale 2 = 3.0 (0x4200).
    DeviceBuffer h(16 * 2);
    h.upload(std::vector<std::uint16_t>(16, 0x3e00));
    device_allreduce(e, "half", {&h}, 16, DataType::float16, ReduceOp::sum, 0, 2.0).wait();
    EXPECT_EQ(h.download<std::uint16_t>(16), std::vector<std::uint16_t>(16, 0x4200));

    // Integer average (one rank: the sum divided by 1).
    DeviceBuffer iv(8 * 8);
    iv.upload(std::vector<std::int64_t>{-7, 7, 0, 1, 2, 3, 4, 5});
    device_allreduce(e, "int-average", {&iv}, 8, DataType::int64, ReduceOp::average, 0).wait();
    EXPECT_EQ(iv.download<std::int64_t>(8), (std::vector<std::int64_t>{-7, 7, 0, 1, 2, 3, 4, 5}));

    // Broadcast in place, allgather into an engine-owned device buffer.
    Request br;
    br.kind = engine::OpKind::broadcast;
    br.name = "bcast";
    br.tensors.push_back({a.get(), a.get(), {static_cast<std::int64_t>(n)}, 0});
    e.enqueue(br).wait();
    Request ag;
    ag.kind = engine::OpKind::allgather;
    ag.name = "gather";
    ag.tensors.push_back({b.get(), nullptr, {10, 100}, 0});
    Handle gh = e.enqueue(ag);
    EXPECT_EQ(gh.output_shape(), (std::vector<std::int64_t>{10, 100}));
    ASSERT_EQ(gh.allgather_output_bytes(), n * 4);
    DeviceBuffer gathered(n * 4);
    gh.copy_allgather_output(gathered.get());
    EXPECT_EQ(gathered.download<float>(n), b.download<float>(n));
  });
}

// Two ranks on one GPU as two fake hosts, hierarchical: NCCL (one rank each) + the CPU ring.
TEST(EngineGpu, HierarchicalAcrossFakeHostsOnOneGpu) {
  RISEML_SKIP_WITHOUT_GPU();
  run_engines(fake_hosts_hierarchical(2), [](Engine& e, int rank) {
    for (std::size_t n : {std::size_t{1}, std::size_t{4099}, std::size_t{1} << 20}) {
      DeviceBuffer x(n * 4), y(n * 4);
      x.upload(pattern(rank, n, 1));
      y.upload(pattern(rank, n, 2));
      device_allreduce(e, "h" + std::to_string(n), {&x, &y}, n, DataType::float32, ReduceOp::sum,
                       0)
          .wait();
      const auto x0 = pattern(0, n, 1), x1 = pattern(1, n, 1);
      const auto got = x.download<float>(n);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], x0[i] + x1[i]) << "n " << n << " i " << i;
    }
    // Integer average over 2 ranks truncates: (3 + 4) / 2 = 3, (-3 + -4) / 2 = -3.
    DeviceBuffer iv(2 * 4);
    iv.upload(std::vector<std::int32_t>{3 + rank, -3 - rank});
    device_allreduce(e, "int-average", {&iv}, 2, DataType::int32, ReduceOp::average, 0).wait();
    EXPECT_EQ(iv.download<std::int32_t>(2), (std::vector<std::int32_t>{3, -3}));
    // Broadcast from rank 1 and a ragged allgather (rank r gives r + 1 rows) go through the CPU.
    DeviceBuffer v(64 * 4);
    v.upload(pattern(rank, 64, 9));
    Request br;
    br.kind = engine::OpKind::broadcast;
    br.name = "b";
    br.root = 1;
    br.tensors.push_back({v.get(), v.get(), {64}, 0});
    e.enqueue(br).wait();
    EXPECT_EQ(v.download<float>(64), pattern(1, 64, 9));
    DeviceBuffer rows(static_cast<std::size_t>(rank + 1) * 4 * 4);
    rows.upload(std::vector<float>(static_cast<std::size_t>(rank + 1) * 4, static_cast<float>(rank)));
    Request ag;
    ag.kind = engine::OpKind::allgather;
    ag.name = "g";
    ag.tensors.push_back({rows.get(), nullptr, {rank + 1, 4}, 0});
    Handle gh = e.enqueue(ag);
    EXPECT_EQ(gh.output_shape(), (std::vector<std::int64_t>{3, 4}));
    DeviceBuffer all(12 * 4);
    gh.copy_allgather_output(all.get());
    const std::vector<float> want = {0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
    EXPECT_EQ(all.download<float>(12), want);
  });
}

// A grouped reducescatter of device tensors: one rank flat (NCCL's reduce-scatter), then two
// fake hosts hierarchical (an allreduce of a device copy, this rank's share): rows dealt in
// rank order (7 rows: 4 and 3; 3 rows of 2: 2 and 1 rows), prescale and postscale.
TEST(EngineGpu, GroupedReducescatterOnTheGpu) {
  RISEML_SKIP_WITHOUT_GPU();
  for (const Ranks& ranks : {Ranks{}, fake_hosts_hierarchical(2)}) {
    run_engines(ranks, [&](Engine& e, int rank) {
      const int n = ranks.n;
      DeviceBuffer a(7 * 4), b(6 * 4);
      a.upload(pattern(rank, 7, 1));
      b.upload(pattern(rank, 6, 2));
      auto rows_of = [&](int rows, int r) { return rows / n + (r < rows % n ? 1 : 0); };
      const int a_rows = rows_of(7, rank), b_rows = rows_of(3, rank);
      DeviceBuffer a_out(static_cast<std::size_t>(a_rows) * 4), b_out(static_cast<std::size_t>(b_rows) * 2 * 4);
      Request r;
      r.kind = engine::OpKind::reducescatter;
      r.name = "rs";
      r.dtype = DataType::float32;
      r.prescale = 0.5;
      r.postscale = 4.0;
      r.tensors.push_back({a.get(), a_out.get(), {7}, 0});
      r.tensors.push_back({b.get(), b_out.get(), {3, 2}, 0});
      e.enqueue(std::move(r)).wait();
      const int a_first = rank == 0 ? 0 : rows_of(7, 0), b_first = rank == 0 ? 0 : rows_of(3, 0) * 2;
      auto want = [&](std::size_t count, int salt, int first, std::size_t k) {
        float sum = 0;
        for (int q = 0; q < n; ++q) sum += pattern(q, count, salt)[static_cast<std::size_t>(first) + k] * 0.5f;
        return sum * 4.0f;
      };
      const auto ga = a_out.download<float>(static_cast<std::size_t>(a_rows));
      for (std::size_t k = 0; k < ga.size(); ++k) ASSERT_EQ(ga[k], want(7, 1, a_first, k)) << "ranks " << n;
      const auto gb = b_out.download<float>(static_cast<std::size_t>(b_rows) * 2);
      for (std::size_t k = 0; k < gb.size(); ++k) ASSERT_EQ(gb[k], want(6, 2, b_first, k)) << "ranks " << n;
    });
  }
}

TEST(EngineGpu, GroupedAllgatherOnTheGpu) {
  RISEML_SKIP_WITHOUT_GPU();
  for (const Ranks& ranks : {Ranks{}, fake_hosts_hierarchical(2)}) {
    run_engines(ranks, [&](Engine& e, int rank) {
      const int n = ranks.n;
      // rank q: q + 1 rows of 2 of the first tensor, q rows of 3 (none on rank 0) of the second
      const auto a_count = static_cast<std::size_t>(rank + 1) * 2, b_count = static_cast<std::size_t>(rank) * 3;
      DeviceBuffer a(a_count * 4), b(std::max<std::size_t>(b_count, 1) * 4);
      a.upload(pattern(rank, a_count, 1));
      if (b_count) b.upload(pattern(rank, b_count, 2));
      Request r;
      r.kind = engine::OpKind::allgather;
      r.name = "grouped";
      r.dtype = DataType::float32;
      r.tensors.push_back({a.get(), nullptr, {rank + 1, 2}, 0});
      r.tensors.push_back({b_count ? b.get() : nullptr, nullptr, {rank, 3}, 0});
      Handle h = e.enqueue(std::move(r));
      std::vector<float> want_a, want_b;
      for (int q = 0; q < n; ++q) {
        const auto pa = pattern(q, static_cast<std::size_t>(q + 1) * 2, 1);
        const auto pb = pattern(q, static_cast<std::size_t>(q) * 3, 2);
        want_a.insert(want_a.end(), pa.begin(), pa.end());
        want_b.insert(want_b.end(), pb.begin(), pb.end());
      }
      DeviceBuffer out_a(want_a.size() * 4), out_b(std::max<std::size_t>(want_b.size(), 1) * 4);
      std::vector<void*> dsts{out_a.get(), out_b.get()};
      h.copy_device_outputs(dsts);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(out_a.download<float>(want_a.size()), want_a) << "ranks " << n;
      EXPECT_EQ(out_b.download<float>(want_b.size()), want_b) << "ranks " << n;
    });
  }
}

TEST(EngineGpu, JoinedRankContributesZerosOnTheGpu) {
  RISEML_SKIP_WITHOUT_GPU();
  run_engines(fake_hosts_hierarchical(2), [](Engine& e, int rank) {
    if (rank == 1) {
      EXPECT_EQ(e.join().join_result(), 0);
      return;
    }
    DeviceBuffer a(100 * 4), b(50 * 4);
    a.upload(pattern(0, 100, 1));
    b.upload(pattern(0, 50, 2));
    device_allreduce(e, "alone", {&a}, 100, DataType::float32, ReduceOp::sum, 0).wait();
    EXPECT_EQ(a.download<float>(100), pattern(0, 100, 1));
    e.join().wait();
  });
}

TEST(EngineGpu, HostOnOneRankAndGpuOnAnotherIsAMismatchNamingBoth) {
  RISEML_SKIP_WITHOUT_GPU();
  run_engines(fake_hosts_hierarchical(2), [](Engine& e, int rank) {
    std::vector<float> host(8, 1.0f);
    DeviceBuffer dev(8 * 4);
    Request r;
    r.name = "where";
    if (rank == 0)
      r.tensors.push_back({dev.get(), dev.get(), {8}, 0});
    else
      r.tensors.push_back({host.data(), host.data(), {8}, -1});
    try {
      e.enqueue(r).wait();
      ADD_FAILURE() << "rank " << rank << ": no mismatch reported";
    } catch (const CollectiveError& err) {
      const std::string what = err.what();
      EXPECT_NE(what.find("mismatched memory"), std::string::npos) << what;
      EXPECT_NE(what.find("rank 0: GPU"), std::string::npos) << what;
      EXPECT_NE(what.find("rank 1: host"), std::string::npos) << what;
    }
  });
}

TEST(EngineGpu, TensorsOnTwoDevicesInOneProcessAreRefused) {
  RISEML_SKIP_WITHOUT_GPU();
  if (testing::device_count() < 2) GTEST_SKIP() << "needs 2 CUDA devices";
  run_engines({}, [](Engine& e, int) {
    DeviceBuffer a(16);
    RISEML_CUDA_OK(cudaSetDevice(1));
    DeviceBuffer b(16);
    RISEML_CUDA_OK(cudaSetDevice(0));
    device_allreduce(e, "on0", {&a}, 4, DataType::float32, ReduceOp::sum, 0).wait();
    try {
      device_allreduce(e, "on1", {&b}, 4, DataType::float32, ReduceOp::sum, 1);
      ADD_FAILURE() << "a second device was accepted";
    } catch (const CollectiveError& err) {
      EXPECT_NE(std::string(err.what()).find("use one GPU per process"), std::string::npos)
          << err.what();
    }
  });
}

// As many ranks as devices, flat NCCL and hierarchical with two fake hosts (needs 4 devices).
TEST(EngineGpu, OneRankPerDeviceFlatAndHierarchical) {
  RISEML_SKIP_WITHOUT_GPU();
  const int devices = testing::device_count();
  if (devices < 2) GTEST_SKIP() << "needs 2 CUDA devices, " << devices << " visible";
  for (const GpuAlgorithm algorithm : {GpuAlgorithm::flat, GpuAlgorithm::hierarchical}) {
    const bool hierarchical = algorithm == GpuAlgorithm::hierarchical;
    if (hierarchical && devices < 4) continue;
    const int n = devices;
    Ranks ranks{n,
                [=](int r) { return hierarchical ? "h" + std::to_string(r % 2) : std::string(); },
                with_algorithm(algorithm)};
    run_engines(ranks, [&](Engine& e, int rank) {
      const std::size_t count = 10007;  // not divisible by the ranks of a host: a remainder
      RISEML_CUDA_OK(cudaSetDevice(rank));
      DeviceBuffer x(count * 4);
      x.upload(pattern(rank, count, 3));
      device_allreduce(e, "x", {&x}, count, DataType::float32, ReduceOp::average, rank).wait();
      std::vector<float> want(count, 0.0f);
      for (int r = 0; r < n; ++r) {
        const auto p = pattern(r, count, 3);
        for (std::size_t i = 0; i < count; ++i) want[i] += p[i];
      }
      const auto got = x.download<float>(count);
      for (std::size_t i = 0; i < count; ++i)
        ASSERT_NEAR(got[i], want[i] / static_cast<float>(n), 1e-4f) << (hierarchical ? "hierarchical" : "flat") << " i " << i;
    });
  }
}

}  // namespace
}  // namespace riseml::cuda
