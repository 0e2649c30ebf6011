// The NCCL communicator: one rank, one rank per visible device (threads), and a dead peer.
#include "gpu_test_util.hpp"

#include <riseml/collective_error.hpp>
#include <riseml/cuda/nccl_communicator.hpp>
#include <riseml/in_memory_rendezvous.hpp>

#include <cstdlib>
#include <map>
#include <memory>
#include <thread>

namespace riseml::cuda {
namespace {

using testing::DeviceBuffer;

class Nccl : public ::testing::Test {
 protected:
  void SetUp() override { RISEML_SKIP_WITHOUT_GPU(); }
};

// Runs body(rank, communicator, stream) on `ranks` threads, one device each.
template <typename Body>
void on_ranks(int ranks, Body body) {
  auto hub = std::make_shared<InMemoryRendezvousHub>(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      InMemoryRendezvous rendezvous(hub, r);
      NcclOptions options;
      options.device = r;
      options.timeout = std::chrono::seconds(60);
      NcclCommunicator comm(rendezvous, options);
      EXPECT_EQ(comm.rank(), r);
      EXPECT_EQ(comm.size(), ranks);
      cudaStream_t stream;
      ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
      body(r, comm, stream);
      comm.synchronize();
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      cudaStreamDestroy(stream);
    });
  for (auto& t : threads) t.join();
}

void allreduce_broadcast_allgather(int ranks) {
  const std::size_t count = 1 << 20;
  on_ranks(ranks, [&](int r, NcclCommunicator& comm, cudaStream_t stream) {
    // allreduce sum: rank r contributes r + 1 + i % 7; float32 sums of small integers are exact.
    std::vector<float> in(count);
    for (std::size_t i = 0; i < count; ++i) in[i] = static_cast<float>(r + 1 + i % 7);
    DeviceBuffer d(count * 4), avg(count * 4);
    d.upload(in);
    avg.upload(in);
    comm.allreduce(d.get(), d.get(), count, DataType::float32, ReduceOp::sum, stream);
    comm.allreduce(avg.get(), avg.get(), count, DataType::float32, ReduceOp::average, stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const auto sum = d.download<float>(count);
    const auto mean = avg.download<float>(count);
    const float base = static_cast<float>(ranks * (ranks + 1) / 2);
    for (std::size_t i = 0; i < count; i += 4099) {
      ASSERT_EQ(sum[i], base + ranks * static_cast<float>(i % 7)) << i;
      ASSERT_FLOAT_EQ(mean[i], (base + ranks * static_cast<float>(i % 7)) / ranks) << i;
    }

    // broadcast from the last rank
    const int root = ranks - 1;
    std::vector<std::int32_t> b(1000, r == root ? 42 : -1);
    DeviceBuffer db(b.size() * 4);
    db.upload(b);
    comm.broadcast(db.get(), b.size(), DataType::int32, root, stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    for (auto v : db.download<std::int32_t>(b.size())) ASSERT_EQ(v, 42);

    // allgather: rank r's block holds r
    std::vector<std::int64_t> g(333, r);
    DeviceBuffer dg(g.size() * 8), dout(g.size() * 8 * ranks);
    dg.upload(g);
    comm.allgather(dg.get(), dout.get(), g.size(), DataType::int64, stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const auto all = dout.download<std::int64_t>(g.size() * ranks);
    for (std::size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], static_cast<long>(i / 333));

    EXPECT_THROW(comm.broadcast(db.get(), 1, DataType::int32, ranks, stream), CollectiveError);
  });
}

TEST_F(Nccl, OneRankAllreduceBroadcastAllgather) { allreduce_broadcast_allgather(1); }

TEST_F(Nccl, OneRankPerDevice) {
  const int devices = testing::device_count();
  if (devices < 2)
    GTEST_SKIP() << "needs 2 or more CUDA devices (NCCL takes one rank per device), found "
                 << devices;
  allreduce_broadcast_allgather(devices);
}

// int8 maps to ncclInt8; NCCL has no int16 and no bool, so those are refused by name.
TEST_F(Nccl, Int8RunsAndInt16AndBoolAreRefused) {
  on_ranks(1, [](int, NcclCommunicator& comm, cudaStream_t stream) {
    std::vector<std::int8_t> v(1000, -5);
    DeviceBuffer d(v.size());
    d.upload(v);
    comm.allreduce(d.get(), d.get(), v.size(), DataType::int8, ReduceOp::sum, stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    for (auto x : d.download<std::int8_t>(v.size())) ASSERT_EQ(x, -5);
    for (DataType t : {DataType::int16, DataType::boolean}) {
      try {
        comm.allreduce(d.get(), d.get(), 10, t, ReduceOp::sum, stream);
        ADD_FAILURE() << to_string(t) << " was not refused";
      } catch (const CollectiveError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
        EXPECT_NE(std::string(e.what()).find("GPU collectives do not support " +
                                             std::string(to_string(t))),
                  std::string::npos)
            << e.what();
      }
    }
  });
}

// Rank 0 of a 2-rank job whose rank 1 never comes: the unique id is "shared", NCCL's setup
// waits for the peer; the communicator must give up after the timeout, not hang.
class LonelyRendezvous : public Rendezvous {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void put(std::string_view key, const std::vector<std::byte>& value) override {
    values_[std::string(key)] = value;
  }
  void fence(std::chrono::milliseconds) override {}
  std::vector<std::byte> get(int, std::string_view key, std::chrono::milliseconds) override {
    return values_.at(std::string(key));
  }
  std::vector<std::byte> job_secret() override { return {}; }

 private:
  std::map<std::string, std::vector<std::byte>> values_;
};

TEST_F(Nccl, DeadPeerTimesOutInsteadOfHanging) {
  LonelyRendezvous rendezvous;
  NcclOptions options;
  options.device = 0;
  options.timeout = std::chrono::seconds(3);
  const auto start = std::chrono::steady_clock::now();
  try {
    NcclCommunicator comm(rendezvous, options);
    FAIL() << "setup succeeded without the peer";
  } catch (const CollectiveError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::timeout) << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 0 of 2"), std::string::npos) << what;
    EXPECT_NE(what.find("host "), std::string::npos) << what;
    EXPECT_NE(what.find("NCCL_"), std::string::npos) << what;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(NcclEnvironment, ListsTheNcclVariables) {
  ::unsetenv("NCCL_RISEML_TEST");
  const std::string before = nccl_environment();
  ::setenv("NCCL_RISEML_TEST", "1", 1);
  EXPECT_NE(nccl_environment().find("NCCL_RISEML_TEST=1"), std::string::npos);
  ::unsetenv("NCCL_RISEML_TEST");
  EXPECT_EQ(nccl_environment(), before);
}

}  // namespace
}  // namespace riseml::cuda
