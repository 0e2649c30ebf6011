// The engine's GPU path on the host-memory stand-in (GpuOptions::host_standin; CTest label
// gpu_host): requests name CUDA device 0, their pointers are host memory, and the device
// strategy runs as on a GPU (type rules, scaling, fusion, joined ranks' zeros, completion
// deferred to the path's watcher thread), with the CPU communicator in place of NCCL. So CI
// checks the GPU path's logic on every build; tests/cuda runs the same on a real GPU.
#include "engine_ranks.hpp"
#include "scaling.hpp"
#include "wire.hpp"

#include <riseml/half_float.hpp>

#include <riseml/engine/engine.hpp>
#include <riseml/in_memory_rendezvous.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace riseml::engine {
namespace {

constexpr int kDevice = 0;

EngineOptions standin() {
  EngineOptions o;
  o.gpu.host_standin = true;
  o.cycle_time = std::chrono::microseconds(200);
  return o;
}

void run_ranks(int n, const testing::Body& body) {
  testing::run_engines(n, [](int) { return standin(); }, body);
}

Request device_request(OpKind kind, std::string name, DataType type) {
  Request r;
  r.kind = kind;
  r.name = std::move(name);
  r.dtype = type;
  return r;
}

void add_tensor(Request& r, const void* in, void* out, std::vector<std::int64_t> shape) {
  r.tensors.push_back({in, out, std::move(shape), kDevice});
}

std::vector<float> pattern(int rank, std::size_t n, int salt) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((static_cast<int>(i) * 7 + salt * 13 + rank * 3) % 29) - 14.0f;
  return v;
}

// The error enqueue() or wait() throws, "" when it succeeds.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const CollectiveError& e) {
    return e.what();
  }
  return "";
}

// A call the GPU path refuses fails that call alone: the engine goes on, 100 calls after it
// complete with the right results on every rank.
TEST(EngineGpuHost, ARefusedCallFailsAloneAndAHundredGoodOnesFollow) {
  run_ranks(2, [](Engine& e, int rank) {
    std::vector<std::int16_t> shorts(8, 1);
    Request bad = device_request(OpKind::allreduce, "shorts", DataType::int16);
    add_tensor(bad, shorts.data(), shorts.data(), {8});
    const std::string why = error_of([&] { e.enqueue(bad).wait(); });
    EXPECT_NE(why.find("a reduction of int16 GPU tensors is not supported"), std::string::npos) << why;
    std::vector<std::uint8_t> flags(4, 1);
    Request bools = device_request(OpKind::allreduce, "flags", DataType::boolean);
    add_tensor(bools, flags.data(), flags.data(), {4});
    EXPECT_NE(error_of([&] { e.enqueue(bools).wait(); }).find("a reduction of bool"), std::string::npos);
    Request adasum = device_request(OpKind::allreduce, "adasum", DataType::float32);
    adasum.adasum = true;
    std::vector<float> rows(8, 1.0f);
    add_tensor(adasum, rows.data(), rows.data(), {8});
    EXPECT_NE(error_of([&] { e.enqueue(adasum).wait(); }).find("Adasum of GPU tensors"),
              std::string::npos);
    Request shorts_scatter = device_request(OpKind::reducescatter, "shorts.rs", DataType::int16);
    std::vector<std::int16_t> mine(4);
    add_tensor(shorts_scatter, shorts.data(), mine.data(), {8});
    EXPECT_NE(error_of([&] { e.enqueue(shorts_scatter).wait(); }).find("a reduction of int16"),
              std::string::npos);
    for (int i = 0; i < 100; ++i) {
      std::vector<float> x = pattern(rank, 33, i), y = pattern(rank, 5, i + 1000);
      Request r = device_request(OpKind::allreduce, "good", DataType::float32);
      add_tensor(r, x.data(), x.data(), {33});
      add_tensor(r, y.data(), y.data(), {5});
      e.enqueue(r).wait();
      const auto x0 = pattern(0, 33, i), x1 = pattern(1, 33, i);
      for (std::size_t k = 0; k < 33; ++k) ASSERT_EQ(x[k], x0[k] + x1[k]) << "call " << i;
      const auto y0 = pattern(0, 5, i + 1000), y1 = pattern(1, 5, i + 1000);
      for (std::size_t k = 0; k < 5; ++k) ASSERT_EQ(y[k], y0[k] + y1[k]) << "call " << i;
    }
    EXPECT_FALSE(e.stopped());
    e.barrier().wait();  // no rank shuts its engine down before the other has looked
  });
}

// A grouped reducescatter of device tensors is one device operation: each tensor's rows dealt
// in rank order (the first rows % size ranks one more; a rank may get none), packed rank-major
// with the shorter shares padded, prescaled, reduced, postscaled and unpacked into this rank's
// outputs; SUM, AVERAGE, MIN and integers, on 3 ranks.
TEST(EngineGpuHost, GroupedReducescatterDealsRowsInRankOrder) {
  constexpr int kRanks = 3;
  // Rows x row elements of each tensor: 7 rows deal 3, 2, 2; 2 rows deal 1, 1, 0; 4 x 3 deal
  // 2, 1, 1 rows of 3.
  const std::vector<std::vector<std::int64_t>> shapes = {{7}, {2}, {4, 3}};
  auto value = [](int rank, std::size_t t, std::size_t i) {
    return static_cast<float>((static_cast<int>(i * 5 + t * 11) + rank * 7) % 23) - 9.0f;
  };
  auto rows_of = [&](std::int64_t rows, int r) {
    return rows / kRanks + (r < rows % kRanks ? 1 : 0);
  };
  run_ranks(kRanks, [&](Engine& e, int rank) {
    struct Case {
      ReduceOp op;
      double pre, post;
    };
    for (const Case c : {Case{ReduceOp::sum, 1.0, 1.0}, Case{ReduceOp::sum, 0.5, 4.0},
                         Case{ReduceOp::average, 1.0, 1.0}, Case{ReduceOp::min, 1.0, 1.0}}) {
      const std::string tag = std::string(to_string(c.op)) + "." + std::to_string(c.pre);
      std::vector<std::vector<float>> ins, outs;
      Request r = device_request(OpKind::reducescatter, "rs." + tag, DataType::float32);
      r.op = c.op;
      r.prescale = c.pre;
      r.postscale = c.post;
      for (std::size_t t = 0; t < shapes.size(); ++t) {
        const std::size_t n = element_count(shapes[t]);
        const std::size_t row = n / static_cast<std::size_t>(shapes[t][0]);
        ins.emplace_back(n);
        for (std::size_t i = 0; i < n; ++i) ins.back()[i] = value(rank, t, i);
        outs.emplace_back(static_cast<std::size_t>(rows_of(shapes[t][0], rank)) * row, -1.0f);
      }
      for (std::size_t t = 0; t < shapes.size(); ++t)
        add_tensor(r, ins[t].data(), outs[t].empty() ? nullptr : outs[t].data(), shapes[t]);
      e.enqueue(r).wait();
      for (std::size_t t = 0; t < shapes.size(); ++t) {
        const std::size_t n = element_count(shapes[t]);
        const std::size_t row = n / static_cast<std::size_t>(shapes[t][0]);
        std::size_t first = 0;
        for (int q = 0; q < rank; ++q) first += static_cast<std::size_t>(rows_of(shapes[t][0], q)) * row;
        for (std::size_t k = 0; k < outs[t].size(); ++k) {
          float want = 0;
          for (int q = 0; q < kRanks; ++q) {
            const float x = value(q, t, first + k) * static_cast<float>(c.pre);
            want = q == 0 ? x : c.op == ReduceOp::min ? std::min(want, x) : want + x;
          }
          if (c.op == ReduceOp::average) want /= kRanks;
          want *= static_cast<float>(c.post);
          ASSERT_EQ(outs[t][k], want) << tag << " tensor " << t << " element " << k;
        }
      }
    }
    // Integers: 5 rows of 2 deal 2, 2, 1 rows.
    std::vector<std::int32_t> in(10), out(static_cast<std::size_t>(rows_of(5, rank)) * 2);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::int32_t>(i) * (rank + 1);
    Request ir = device_request(OpKind::reducescatter, "rs.ints", DataType::int32);
    add_tensor(ir, in.data(), out.data(), {5, 2});
    e.enqueue(ir).wait();
    const std::size_t first = rank == 0 ? 0 : rank == 1 ? 4 : 8;
    for (std::size_t k = 0; k < out.size(); ++k)
      ASSERT_EQ(out[k], static_cast<std::int32_t>(first + k) * (1 + 2 + 3)) << k;
  });
}

// An alltoall of device tensors moves bytes into an engine-owned device buffer, as allgather:
// rank r sends (r + j) % 3 rows of 2 to rank j (none sometimes), the received rows and splits
// in rank order; int16, which NCCL cannot reduce, goes; and the equal split without splits.
TEST(EngineGpuHost, AlltoallOfDeviceTensorsDealsRowsBySplits) {
  constexpr int kRanks = 3;
  auto cell = [](int from, int to, int k) { return static_cast<std::int16_t>(1000 * from + 10 * to + k); };
  run_ranks(kRanks, [&](Engine& e, int rank) {
    std::vector<std::int16_t> in;
    std::vector<std::int64_t> splits;
    for (int j = 0; j < kRanks; ++j) {
      const int rows = (rank + j) % 3;
      splits.push_back(rows);
      for (int k = 0; k < rows * 2; ++k) in.push_back(cell(rank, j, k));
    }
    Request r = device_request(OpKind::alltoall, "a2a", DataType::int16);
    r.splits = splits;
    add_tensor(r, in.empty() ? nullptr : in.data(), nullptr,
               {static_cast<std::int64_t>(in.size() / 2), 2});
    Handle h = e.enqueue(r);
    std::vector<std::int64_t> want_splits;
    std::vector<std::int16_t> want;
    for (int q = 0; q < kRanks; ++q) {
      const int rows = (q + rank) % 3;
      want_splits.push_back(rows);
      for (int k = 0; k < rows * 2; ++k) want.push_back(cell(q, rank, k));
    }
    EXPECT_EQ(h.received_splits(), want_splits);
    EXPECT_EQ(h.output_shape(), (std::vector<std::int64_t>{static_cast<std::int64_t>(want.size() / 2), 2}));
    ASSERT_EQ(h.allgather_output_bytes(), want.size() * 2);
    std::vector<std::int16_t> got(want.size());
    h.copy_allgather_output(got.data());
    EXPECT_EQ(got, want);
    // The equal split: 2 rows to each rank.
    std::vector<float> even(kRanks * 2);
    for (std::size_t i = 0; i < even.size(); ++i) even[i] = static_cast<float>(rank * 100) + static_cast<float>(i);
    Request q = device_request(OpKind::alltoall, "a2a.even", DataType::float32);
    add_tensor(q, even.data(), nullptr, {kRanks * 2});
    Handle he = e.enqueue(q);
    std::vector<float> all(kRanks * 2);
    ASSERT_EQ(he.allgather_output_bytes(), all.size() * 4);
    he.copy_allgather_output(all.data());
    for (int from = 0; from < kRanks; ++from)
      for (int k = 0; k < 2; ++k)
        ASSERT_EQ(all[static_cast<std::size_t>(from * 2 + k)],
                  static_cast<float>(from * 100 + rank * 2 + k)) << from;
  });
}

// A grouped allgather of device tensors is one operation: each output is that tensor's rows
// from every rank, in rank order, whatever rows each rank has (rank 0 none of the second).
TEST(EngineGpuHost, GroupedAllgatherGathersEachTensorInRankOrder) {
  constexpr int kRanks = 3;
  auto cell = [](int rank, int tensor, int k) { return 1000 * rank + 100 * tensor + k; };
  const std::vector<std::vector<std::int64_t>> row_shape{{2}, {1}, {3}};  // after the rows
  auto rows = [](int rank, int tensor) { return tensor == 0 ? rank + 1 : tensor == 1 ? rank : 1; };
  run_ranks(kRanks, [&](Engine& e, int rank) {
    std::vector<std::vector<std::int32_t>> in(3);
    Request r = device_request(OpKind::allgather, "grouped", DataType::int32);
    for (int i = 0; i < 3; ++i) {
      const auto width = static_cast<int>(row_shape[static_cast<std::size_t>(i)][0]);
      for (int k = 0; k < rows(rank, i) * width; ++k) in[static_cast<std::size_t>(i)].push_back(cell(rank, i, k));
      auto& v = in[static_cast<std::size_t>(i)];
      add_tensor(r, v.empty() ? nullptr : v.data(), nullptr, {rows(rank, i), width});
    }
    Handle h = e.enqueue(r);
    std::vector<std::vector<std::int32_t>> want(3), got(3);
    std::vector<std::int32_t> whole;
    for (int i = 0; i < 3; ++i) {
      std::int64_t total = 0;
      for (int q = 0; q < kRanks; ++q) {
        const auto width = static_cast<int>(row_shape[static_cast<std::size_t>(i)][0]);
        for (int k = 0; k < rows(q, i) * width; ++k) want[static_cast<std::size_t>(i)].push_back(cell(q, i, k));
        total += rows(q, i);
      }
      EXPECT_EQ(h.output_shape(static_cast<std::size_t>(i)),
                (std::vector<std::int64_t>{total, row_shape[static_cast<std::size_t>(i)][0]})) << i;
      got[static_cast<std::size_t>(i)].assign(want[static_cast<std::size_t>(i)].size(), -1);
      whole.insert(whole.end(), want[static_cast<std::size_t>(i)].begin(), want[static_cast<std::size_t>(i)].end());
    }
    ASSERT_EQ(h.output_count(), 3u);
    ASSERT_EQ(h.allgather_output_bytes(), whole.size() * 4);
    std::vector<void*> dsts{got[0].data(), got[1].data(), got[2].data()};
    h.copy_device_outputs(dsts);
    EXPECT_EQ(got, want);
    std::vector<std::int32_t> end_to_end(whole.size());
    h.copy_allgather_output(end_to_end.data());
    EXPECT_EQ(end_to_end, whole);
    EXPECT_THROW(h.copy_device_outputs(std::span<void* const>(dsts.data(), 2)), CollectiveError);
    // The same tensors one at a time agree with the grouped result.
    for (int i = 0; i < 3; ++i) {
      Request one = device_request(OpKind::allgather, "one." + std::to_string(i), DataType::int32);
      auto& v = in[static_cast<std::size_t>(i)];
      add_tensor(one, v.empty() ? nullptr : v.data(), nullptr,
                 {rows(rank, i), row_shape[static_cast<std::size_t>(i)][0]});
      Handle ho = e.enqueue(one);
      std::vector<std::int32_t> single(want[static_cast<std::size_t>(i)].size());
      ho.copy_allgather_output(single.data());
      EXPECT_EQ(single, want[static_cast<std::size_t>(i)]) << i;
    }
  });
}

// Broadcast and allgather move bytes: every type goes, those NCCL cannot reduce too.
TEST(EngineGpuHost, BroadcastAndAllgatherMoveEveryTypeAsBytes) {
  run_ranks(3, [](Engine& e, int rank) {
    for (DataType type : {DataType::int16, DataType::boolean, DataType::float16,
                          DataType::float64, DataType::int8}) {
      const std::size_t esize = element_size(type);
      const std::string tag(to_string(type));
      // Broadcast from rank 2: 17 elements.
      std::vector<std::uint8_t> b(17 * esize);
      for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(i * 3 + rank);
      Request br = device_request(OpKind::broadcast, "b." + tag, type);
      br.root = 2;
      add_tensor(br, b.data(), b.data(), {17});
      e.enqueue(br).wait();
      for (std::size_t i = 0; i < b.size(); ++i)
        ASSERT_EQ(b[i], static_cast<std::uint8_t>(i * 3 + 2)) << tag << " byte " << i;
      // Allgather: rank r gives r + 1 rows of 3 elements.
      const std::size_t rows = static_cast<std::size_t>(rank) + 1;
      std::vector<std::uint8_t> mine(rows * 3 * esize, static_cast<std::uint8_t>(rank + 1));
      Request ag = device_request(OpKind::allgather, "g." + tag, type);
      add_tensor(ag, mine.data(), nullptr, {static_cast<std::int64_t>(rows), 3});
      Handle h = e.enqueue(ag);
      EXPECT_EQ(h.output_shape(), (std::vector<std::int64_t>{6, 3})) << tag;
      ASSERT_EQ(h.allgather_output_bytes(), 6 * 3 * esize) << tag;
      std::vector<std::uint8_t> all(6 * 3 * esize);
      h.copy_allgather_output(all.data());
      std::size_t at = 0;
      for (int r = 0; r < 3; ++r)
        for (std::size_t k = 0; k < static_cast<std::size_t>(r + 1) * 3 * esize; ++k)
          ASSERT_EQ(all[at++], static_cast<std::uint8_t>(r + 1)) << tag << " from rank " << r;
    }
  });
}

// Prescale and postscale as the GPU kernels do them: floats in their own precision (16-bit ones
// by the factor rounded to their type, in float32, rounded once), integers in double and
// truncated; average after the sum.
TEST(EngineGpuHost, ScalingFollowsTheGpuRules) {
  const double pre = 0.3711, post = 1.7;
  auto int_of = [](int rank, std::size_t i) { return static_cast<std::int32_t>(i * 11) - 40 + rank * 3; };
  auto half_of = [](int rank, std::size_t i) {
    return static_cast<std::uint16_t>(0x3c00 + 37 * i + 5 * static_cast<std::size_t>(rank));
  };
  // Each rank's input prescaled (scale_copy is the rule the kernels follow), summed (halves:
  // in float32, rounded once), averaged (integers truncate), postscaled.
  auto expected_ints = [&](ReduceOp op) {
    std::vector<std::int32_t> sum(9, 0);
    for (int r = 0; r < 2; ++r) {
      std::vector<std::int32_t> in(9), scaled(9);
      for (std::size_t i = 0; i < 9; ++i) in[i] = int_of(r, i);
      scale_copy(in.data(), scaled.data(), 9, DataType::int32, pre);
      for (std::size_t i = 0; i < 9; ++i) sum[i] += scaled[i];
    }
    if (op == ReduceOp::average)
      for (auto& v : sum) v /= 2;
    std::vector<std::int32_t> out(9);
    scale_copy(sum.data(), out.data(), 9, DataType::int32, post);
    return out;
  };
  auto expected_halves = [&] {
    std::vector<float> sum(9, 0.0f);
    for (int r = 0; r < 2; ++r) {
      std::vector<std::uint16_t> in(9), scaled(9);
      for (std::size_t i = 0; i < 9; ++i) in[i] = half_of(r, i);
      // The factor rounded to float16 first (Horovod's GPU rule), then float32 math.
      scale_copy(in.data(), scaled.data(), 9, DataType::float16,
                 device_scale_factor(DataType::float16, pre));
      for (std::size_t i = 0; i < 9; ++i) sum[i] += kernels::float16_to_float(scaled[i]);
    }
    std::vector<std::uint16_t> rounded(9), out(9);
    for (std::size_t i = 0; i < 9; ++i) rounded[i] = kernels::float_to_float16(sum[i]);
    scale_copy(rounded.data(), out.data(), 9, DataType::float16,
               device_scale_factor(DataType::float16, post));
    return out;
  };
  run_ranks(2, [&](Engine& e, int rank) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::average}) {
      std::vector<std::int32_t> got(9);
      for (std::size_t i = 0; i < 9; ++i) got[i] = int_of(rank, i);
      Request r = device_request(OpKind::allreduce, "ints." + std::string(to_string(op)), DataType::int32);
      r.op = op;
      r.prescale = pre;
      r.postscale = post;
      add_tensor(r, got.data(), got.data(), {9});
      e.enqueue(r).wait();
      EXPECT_EQ(got, expected_ints(op)) << to_string(op);
    }
    std::vector<std::uint16_t> halves(9);
    for (std::size_t i = 0; i < 9; ++i) halves[i] = half_of(rank, i);
    Request hr = device_request(OpKind::allreduce, "halves", DataType::float16);
    hr.prescale = pre;
    hr.postscale = post;
    add_tensor(hr, halves.data(), halves.data(), {9});
    e.enqueue(hr).wait();
    EXPECT_EQ(halves, expected_halves());
    std::vector<float> f = pattern(rank, 9, 4);
    Request fr = device_request(OpKind::allreduce, "floats", DataType::float32);
    fr.prescale = pre;
    fr.postscale = post;
    add_tensor(fr, f.data(), f.data(), {9});
    e.enqueue(fr).wait();
    const auto f0 = pattern(0, 9, 4), f1 = pattern(1, 9, 4);
    const float p = static_cast<float>(pre), q = static_cast<float>(post);
    for (std::size_t i = 0; i < 9; ++i) ASSERT_EQ(f[i], (f0[i] * p + f1[i] * p) * q) << i;
  });
}

// The GPU rule for the factor: rounded to a 16-bit float tensor's own type (Horovod's kernels
// multiply by __float2half(factor); its tests expect factor.half() * tensor), as given else.
TEST(EngineGpuHost, SixteenBitFloatsTakeTheFactorRoundedToTheirType) {
  EXPECT_EQ(device_scale_factor(DataType::float16, 0.1), 0.0999755859375);
  EXPECT_EQ(device_scale_factor(DataType::bfloat16, 0.1), 0.10009765625);
  EXPECT_EQ(device_scale_factor(DataType::float32, 0.1), 0.1);
  EXPECT_EQ(device_scale_factor(DataType::int32, 0.1), 0.1);
}

// A bucket of many tensors fused into one collective, with a rank that joined contributing
// zeros, on 3 ranks; the join completes for all.
TEST(EngineGpuHost, FusedBucketWithAJoinedRanksZeros) {
  run_ranks(3, [](Engine& e, int rank) {
    if (rank == 2) {  // joins at once: its share of every allreduce is zeros
      e.join().wait();
      return;
    }
    std::vector<std::vector<float>> xs;
    std::vector<Handle> handles;
    for (int t = 0; t < 20; ++t) xs.push_back(pattern(rank, static_cast<std::size_t>(1 + t * 5), t));
    for (int t = 0; t < 20; ++t) {
      Request r = device_request(OpKind::allreduce, "t" + std::to_string(t), DataType::float32);
      add_tensor(r, xs[static_cast<std::size_t>(t)].data(), xs[static_cast<std::size_t>(t)].data(),
                 {static_cast<std::int64_t>(xs[static_cast<std::size_t>(t)].size())});
      handles.push_back(e.enqueue(r));
    }
    for (auto& h : handles) h.wait();
    for (int t = 0; t < 20; ++t) {
      const std::size_t n = static_cast<std::size_t>(1 + t * 5);
      const auto a = pattern(0, n, t), b = pattern(1, n, t);
      for (std::size_t k = 0; k < n; ++k)
        ASSERT_EQ(xs[static_cast<std::size_t>(t)][k], a[k] + b[k]) << "tensor " << t;
    }
    e.join().wait();
  });
}

// After a cycle that enqueued GPU work the engine waits out the cycle time (GPU cycles only
// enqueue, so a cycle per submission would give each gradient its own NCCL call): a burst
// handed over meanwhile, nobody waiting on it yet, runs as one fused collective (it ran as 32,
// one a gradient). Counted in the timeline: the burst's NCCL_ALLREDUCE events by their start.
TEST(EngineGpuHost, ABurstAfterGpuWorkIsFused) {
  for (int ranks : {1, 2}) {
    const std::string path = ::testing::TempDir() + "gpu_host_burst." + std::to_string(::getpid()) + ".json";
    std::remove(path.c_str());
    testing::run_engines(ranks, [&](int) {
      EngineOptions o = standin();
      o.cycle_time = std::chrono::seconds(1);  // longer than the burst on a loaded machine
      o.timeline_path = path;
      return o;
    }, [](Engine& e, int rank) {
      std::vector<float> first(4, 1.0f);
      Request r = device_request(OpKind::allreduce, "first", DataType::float32);
      add_tensor(r, first.data(), first.data(), {4});
      e.enqueue(r).wait();  // GPU work: the engine now waits out the cycle
      std::vector<std::vector<float>> xs;
      std::vector<Handle> handles;
      for (int t = 0; t < 32; ++t) xs.push_back(pattern(rank, 64, t));
      for (int t = 0; t < 32; ++t) {
        Request b = device_request(OpKind::allreduce, "burst." + std::to_string(t), DataType::float32);
        add_tensor(b, xs[static_cast<std::size_t>(t)].data(), xs[static_cast<std::size_t>(t)].data(), {64});
        handles.push_back(e.enqueue(b));
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // a backward pass's pace
      }
      // Both ranks have handed the burst over before either waits (a rank that waits runs the
      // cycle, and its message starts the other's).
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      for (auto& h : handles) h.wait();
      for (int t = 0; t < 32; ++t) {
        std::vector<float> want = pattern(0, 64, t);
        if (e.size() == 2) {
          const auto b = pattern(1, 64, t);
          for (std::size_t k = 0; k < want.size(); ++k) want[k] += b[k];
        }
        ASSERT_EQ(xs[static_cast<std::size_t>(t)], want) << "tensor " << t;
      }
    });
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const std::string timeline = text.str();
    in.close();
    std::remove(path.c_str());  // every run left one in the temporary folder
    // Rows ("tid") are tensors, named in their thread_name lines; events name their phase.
    auto field = [](const std::string& line, const std::string& key) {
      const std::size_t at = line.find("\"" + key + "\": ");
      if (at == std::string::npos) return std::string();
      const std::size_t from = at + key.size() + 4;
      return line.substr(from, line.find_first_of(",}", from) - from);
    };
    std::set<std::string> burst_rows, starts;  // starts: of the burst's collectives
    std::size_t events = 0;
    std::istringstream lines(timeline);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("\"thread_name\"") != std::string::npos &&
          line.find("\"args\": {\"name\": \"burst.") != std::string::npos)
        burst_rows.insert(field(line, "tid"));
      if (line.find("\"NCCL_ALLREDUCE\"") != std::string::npos && burst_rows.count(field(line, "tid"))) {
        ++events;
        starts.insert(field(line, "ts"));
      }
    }
    EXPECT_EQ(events, 32u) << ranks << " rank(s)\n" << timeline;
    // One; on 2 ranks two when one rank was more than 100 ms behind the other (a loaded host).
    EXPECT_LE(starts.size(), ranks == 1 ? 1u : 2u) << ranks << " rank(s): the burst ran as " << starts.size()
                                                   << " collectives";
  }
}

// ... and a call waited on at once still runs at once: the waiting thread runs the cycle, it
// does not wait out the cycle time (20 calls in a row, after the first, well inside one 300 ms
// cycle).
TEST(EngineGpuHost, ACallWaitedOnAtOnceDoesNotWaitOutTheCycle) {
  testing::run_engines(2, [](int) {
    EngineOptions o = standin();
    o.cycle_time = std::chrono::milliseconds(300);
    return o;
  }, [](Engine& e, int rank) {
    std::vector<float> x(4);
    auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < 21; ++k) {
      if (k == 1) start = std::chrono::steady_clock::now();  // the engine's first cycle is planned
      x.assign(4, static_cast<float>(rank + k));
      Request r = device_request(OpKind::allreduce, "call", DataType::float32);
      add_tensor(r, x.data(), x.data(), {4});
      e.enqueue(r).wait();
      ASSERT_EQ(x[0], static_cast<float>(2 * k + 1));
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(250));
  });
}

}  // namespace
}  // namespace riseml::engine
