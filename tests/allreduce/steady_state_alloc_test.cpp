// "No allocation on the steady-state path": after one warm-up call of each kind, repeated
// collectives over shared memory and TCP must not allocate at all. Counts operator new on the
// ranks' threads while they are inside the measured calls.
// Replacing the global operator new/delete pairs malloc with free on purpose; GCC cannot see
// that once they are inlined into the tests.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "rank_threads.hpp"

namespace {
thread_local bool counting = false;
std::atomic<long> counted{0};
}  // namespace

void* operator new(std::size_t n) {
  if (counting) counted.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace riseml {
namespace {

TEST(SteadyState, TheCounterCounts) {
  counting = true;
  auto* p = new std::vector<int>(3);
  counting = false;
  delete p;
  EXPECT_GT(counted.load(), 0);  // the hook is live
  counted = 0;
}

void run_steady_state(TransportChoice transport, int n) {
  CommunicatorOptions o;
  o.transport = transport;
  o.timeout = std::chrono::seconds(30);
  auto outcomes = test::run_ranks(n, o, [&](Communicator& comm) {
    const std::size_t big = (1 << 20) + 3, small = 1000;
    std::vector<float> a(big * static_cast<std::size_t>(n), 1.0f), b(a.size());
    std::vector<std::uint16_t> h(big, 0x3c00), h_out(big);
    auto round = [&] {
      for (Algorithm algo : {Algorithm::ring, Algorithm::halving_doubling, Algorithm::automatic}) {
        comm.allreduce(a.data(), b.data(), big, DataType::float32, ReduceOp::sum, algo);
        comm.allreduce(a.data(), b.data(), small, DataType::float32, ReduceOp::average, algo);
      }
      comm.allreduce(h.data(), h_out.data(), big, DataType::bfloat16, ReduceOp::sum);
      comm.broadcast(a.data(), big, DataType::float32, 0);
      comm.allgather(a.data(), b.data(), big, DataType::float32);
      comm.reduce_scatter(a.data(), b.data(), big, DataType::float32, ReduceOp::max);
      comm.barrier();
    };
    round();  // warm-up: scratch space grows to its size here
    counting = true;
    for (int i = 0; i < 5; ++i) round();
    counting = false;
  });
  for (auto& out : outcomes) ASSERT_TRUE(out.ok) << out.error;
  EXPECT_EQ(counted.load(), 0) << "allocations on the steady-state path";
  counted = 0;
}

TEST(SteadyState, SharedMemoryCollectivesDoNotAllocate) { run_steady_state(TransportChoice::shm, 3); }

TEST(SteadyState, TcpCollectivesDoNotAllocate) { run_steady_state(TransportChoice::tcp, 2); }

}  // namespace
}  // namespace riseml
