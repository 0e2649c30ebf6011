// The engine's GPU path call by call on a real GPU (one rank): a refused call fails alone and
// 100 good ones follow; every type moves through broadcast and allgather; integers scale; and
// completion is stream-ordered: wait_stream_ordered() returns while the caller's stream is
// still busy, and the result is there once that stream gets past it. Without a GPU every test
// skips (the same logic runs on the host stand-in: tests/engine/engine_gpu_host_test.cpp).
#include <riseml/engine/engine.hpp>
#include <riseml/in_memory_rendezvous.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_util.hpp"

namespace riseml::cuda {
namespace {

using engine::Engine;
using engine::Handle;
using engine::OpKind;
using engine::Request;
using testing::DeviceBuffer;
using Clock = std::chrono::steady_clock;

void one_rank(const std::function<void(Engine&)>& body) {
  auto hub = std::make_shared<InMemoryRendezvousHub>(1);
  InMemoryRendezvous rendezvous(hub, 0);
  CommunicatorOptions o;
  o.transport = TransportChoice::inproc;
  o.timeout = std::chrono::seconds(30);
  engine::EngineOptions options;
  options.gpu.device = 0;
  Engine e(rendezvous, o, options);
  body(e);
}

Request on_gpu(OpKind kind, std::string name, DataType type, void* buffer,
               std::vector<std::int64_t> shape, void* stream = nullptr) {
  Request r;
  r.kind = kind;
  r.name = std::move(name);
  r.dtype = type;
  r.stream = stream;
  r.tensors.push_back({buffer, kind == OpKind::allgather ? nullptr : buffer, std::move(shape), 0});
  return r;
}

TEST(EngineGpuCalls, ARefusedCallFailsAloneAndAHundredGoodOnesFollow) {
  RISEML_SKIP_WITHOUT_GPU();
  one_rank([](Engine& e) {
    DeviceBuffer shorts(16);
    try {
      e.enqueue(on_gpu(OpKind::allreduce, "shorts", DataType::int16, shorts.get(), {8})).wait();
      ADD_FAILURE() << "an int16 GPU allreduce was accepted";
    } catch (const CollectiveError& err) {
      EXPECT_EQ(err.kind(), ErrorKind::invalid_argument);
    }
    DeviceBuffer x(64 * 4);
    for (int i = 0; i < 100; ++i) {
      x.upload(std::vector<float>(64, static_cast<float>(i)));
      e.enqueue(on_gpu(OpKind::allreduce, "good", DataType::float32, x.get(), {64})).wait();
      ASSERT_EQ(x.download<float>(64), std::vector<float>(64, static_cast<float>(i))) << i;
    }
    EXPECT_FALSE(e.stopped());
  });
}

TEST(EngineGpuCalls, BroadcastAndAllgatherMoveInt16AndBool) {
  RISEML_SKIP_WITHOUT_GPU();
  one_rank([](Engine& e) {
    for (DataType type : {DataType::int16, DataType::boolean}) {
      const std::size_t esize = element_size(type);
      std::vector<std::uint8_t> bytes(17 * esize);
      for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i % 2);
      DeviceBuffer b(bytes.size());
      b.upload(bytes);
      e.enqueue(on_gpu(OpKind::broadcast, "b", type, b.get(), {17})).wait();
      EXPECT_EQ(b.download<std::uint8_t>(bytes.size()), bytes);
      Handle h = e.enqueue(on_gpu(OpKind::allgather, "g", type, b.get(), {17}));
      ASSERT_EQ(h.allgather_output_bytes(), bytes.size());
      DeviceBuffer out(bytes.size());
      h.copy_allgather_output(out.get());
      EXPECT_EQ(out.download<std::uint8_t>(bytes.size()), bytes);
    }
  });
}

TEST(EngineGpuCalls, IntegersScaleInDoubleAndTruncate) {
  RISEML_SKIP_WITHOUT_GPU();
  one_rank([](Engine& e) {
    DeviceBuffer x(5 * 4);
    x.upload(std::vector<std::int32_t>{-7, -1, 0, 3, 100});
    Request r = on_gpu(OpKind::allreduce, "ints", DataType::int32, x.get(), {5});
    r.prescale = 0.5;
    r.postscale = 3.0;
    e.enqueue(r).wait();
    // trunc(x * 0.5) on one rank, then trunc(that * 3).
    EXPECT_EQ(x.download<std::int32_t>(5), (std::vector<std::int32_t>{-9, 0, 0, 3, 150}));
  });
}

// A host function holds the caller's stream for 300 ms: the allreduce queued behind it is
// handed back at once (the stream waits, not the CPU), and its result is in place once the
// stream passed it; Handle::wait() (the CPU's wait) returns only then.
TEST(EngineGpuCalls, CompletionIsStreamOrdered) {
  RISEML_SKIP_WITHOUT_GPU();
  one_rank([](Engine& e) {
    cudaStream_t caller = nullptr;
    RISEML_CUDA_OK(cudaStreamCreateWithFlags(&caller, cudaStreamNonBlocking));
    DeviceBuffer x(1024 * 4), y(1024 * 4);
    x.upload(std::vector<float>(1024, 2.0f));
    RISEML_CUDA_OK(cudaLaunchHostFunc(
        caller, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }, nullptr));
    const auto start = Clock::now();
    Handle h = e.enqueue(on_gpu(OpKind::allreduce, "ordered", DataType::float32, x.get(), {1024}, caller));
    h.wait_stream_ordered();
    const auto handed_back = Clock::now() - start;
    EXPECT_LT(handed_back, std::chrono::milliseconds(200)) << "the CPU waited for the stream";
    // Work queued on the caller's stream now runs after the allreduce.
    RISEML_CUDA_OK(cudaMemcpyAsync(y.get(), x.get(), 1024 * 4, cudaMemcpyDeviceToDevice, caller));
    h.wait();
    EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(250));
    RISEML_CUDA_OK(cudaStreamSynchronize(caller));
    EXPECT_EQ(y.download<float>(1024), std::vector<float>(1024, 2.0f));
    cudaStreamDestroy(caller);
  });
}

}  // namespace
}  // namespace riseml::cuda
