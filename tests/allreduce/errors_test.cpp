// Ranks that disagree, fail or fall silent: every rank gets an error naming the culprit, no
// call hangs, and a failed communicator refuses further calls.
#include <gtest/gtest.h>

#include <riseml/allreduce.h>

#include <chrono>
#include <cstring>

#include "rank_threads.hpp"

namespace riseml {
namespace {

using namespace std::chrono_literals;

TEST(Errors, MismatchedCountsAreNamedOnEveryRank) {
  auto outcomes = test::run_ranks(3, test::inproc_options(5s), [](Communicator& comm) {
    const std::size_t count = comm.rank() == 1 ? 1001 : 1000;
    std::vector<float> buf(1001, 1.0f);
    comm.allreduce(buf.data(), buf.data(), count, DataType::float32, ReduceOp::sum);
  });
  for (auto& o : outcomes) {
    ASSERT_FALSE(o.ok);
    EXPECT_TRUE(o.kind == ErrorKind::mismatch || o.kind == ErrorKind::peer_failed) << o.error;
    EXPECT_NE(o.error.find("1001"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("mismatched"), std::string::npos) << o.error;
  }
}

TEST(Errors, MismatchedTypesOpsAndCollectivesAreDetected) {
  auto outcomes = test::run_ranks(2, test::inproc_options(5s), [](Communicator& comm) {
    std::vector<double> buf(64, 1.0);
    if (comm.rank() == 0)
      comm.allreduce(buf.data(), buf.data(), 16, DataType::float64, ReduceOp::sum);
    else
      comm.allreduce(buf.data(), buf.data(), 16, DataType::int64, ReduceOp::max);
  });
  for (auto& o : outcomes) {
    ASSERT_FALSE(o.ok);
    EXPECT_NE(o.error.find("float64"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("int64"), std::string::npos) << o.error;
  }
  outcomes = test::run_ranks(2, test::inproc_options(5s), [](Communicator& comm) {
    std::vector<double> buf(64, 1.0);
    if (comm.rank() == 0) comm.barrier();
    else comm.broadcast(buf.data(), 64, DataType::float64, 0);
  });
  for (auto& o : outcomes) EXPECT_FALSE(o.ok);
}

TEST(Errors, MismatchedAlgorithmIsDetected) {
  auto outcomes = test::run_ranks(4, test::inproc_options(5s), [](Communicator& comm) {
    std::vector<float> buf(100, 1.0f);
    comm.allreduce(buf.data(), buf.data(), 100, DataType::float32, ReduceOp::sum,
                   comm.rank() == 2 ? Algorithm::halving_doubling : Algorithm::ring);
  });
  for (auto& o : outcomes) {
    ASSERT_FALSE(o.ok);
    EXPECT_NE(o.error.find("halving_doubling"), std::string::npos) << o.error;
  }
}

TEST(Errors, SilentRankTimesOutNamingItAndTheCommunicatorStaysFailed) {
  const auto start = std::chrono::steady_clock::now();
  auto outcomes = test::run_ranks(3, test::inproc_options(1s), [](Communicator& comm) {
    std::vector<float> buf(100, 1.0f);
    if (comm.rank() != 2) {
      try {
        comm.allreduce(buf.data(), buf.data(), 100, DataType::float32, ReduceOp::sum);
      } catch (const CollectiveError&) {
        // A failed communicator refuses further calls at once.
        try {
          comm.barrier();
        } catch (const CollectiveError& again) {
          if (again.kind() != ErrorKind::aborted) throw std::runtime_error("not aborted");
        }
        throw;
      }
    }
    // Rank 2 never calls, and stays alive past the others' timeout.
    std::this_thread::sleep_for(2500ms);
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  // The rank waiting on rank 2 names it; a rank waiting on a waiting rank names either.
  ASSERT_FALSE(outcomes[0].ok);
  ASSERT_FALSE(outcomes[1].ok);
  EXPECT_TRUE(outcomes[0].error.find("rank 2") != std::string::npos ||
              outcomes[0].error.find("rank 1") != std::string::npos) << outcomes[0].error;
  EXPECT_TRUE(outcomes[0].kind == ErrorKind::timeout || outcomes[0].kind == ErrorKind::peer_failed);
  const bool one_waits_on_two = outcomes[1].error.find("rank 2") != std::string::npos;
  const bool zero_waits_on_two = outcomes[0].error.find("rank 2") != std::string::npos;
  EXPECT_TRUE(one_waits_on_two || zero_waits_on_two) << outcomes[0].error << " / " << outcomes[1].error;
  EXPECT_TRUE(outcomes[2].ok);
}

TEST(Errors, NullBuffersAreInvalidArgumentsAndLeaveTheCommunicatorUsable) {
  auto outcomes = test::run_ranks(2, test::inproc_options(5s), [](Communicator& comm) {
    try {
      comm.allreduce(nullptr, nullptr, 4, DataType::float32, ReduceOp::sum);
      throw std::runtime_error("no error");
    } catch (const CollectiveError& e) {
      if (e.kind() != ErrorKind::invalid_argument) throw;
    }
    float x = 1;
    comm.allreduce(&x, &x, 1, DataType::float32, ReduceOp::sum);
    if (x != 2) throw std::runtime_error("wrong");
  });
  for (auto& o : outcomes) EXPECT_TRUE(o.ok) << o.error;
}

TEST(CApi, ReturnsErrorCodesNeverExceptions) {
  riseml_comm* comm = nullptr;
  EXPECT_EQ(riseml_comm_create(nullptr, &comm), RISEML_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(riseml_allreduce(nullptr, nullptr, nullptr, 1, RISEML_FLOAT32, RISEML_SUM),
            RISEML_ERR_INVALID_ARGUMENT);
  EXPECT_STRNE(riseml_last_error(), "");

  // A one-rank job through a C rendezvous that keeps nothing (a lone rank needs no peers).
  struct Store { std::vector<std::pair<std::string, std::string>> kv; } store;
  riseml_rendezvous r{};
  r.user = &store;
  r.rank = 0;
  r.size = 1;
  r.put = [](void* u, const char* k, const void* v, size_t n) {
    static_cast<Store*>(u)->kv.emplace_back(k, std::string(static_cast<const char*>(v), n));
    return 0;
  };
  r.fence = [](void*, long) { return 0; };
  r.get = [](void* u, int, const char* k, void* v, size_t cap, size_t* n, long) {
    for (auto& [key, val] : static_cast<Store*>(u)->kv)
      if (key == k) {
        *n = val.size();
        std::memcpy(v, val.data(), std::min(cap, val.size()));
        return 0;
      }
    return 1;
  };
  r.job_secret = [](void*, void* v, size_t cap, size_t* n) {
    *n = 32;
    std::memset(v, 7, std::min<size_t>(cap, 32));
    return 0;
  };
  ASSERT_EQ(riseml_comm_create(&r, &comm), RISEML_OK) << riseml_last_error();
  float x[3] = {1, 2, 3};
  EXPECT_EQ(riseml_allreduce(comm, x, x, 3, RISEML_FLOAT32, RISEML_AVERAGE), RISEML_OK);
  EXPECT_EQ(x[2], 3.0f);
  EXPECT_EQ(riseml_broadcast(comm, x, 3, RISEML_FLOAT32, 5), RISEML_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(riseml_barrier(comm), RISEML_OK);
  riseml_comm_destroy(comm);
}

}  // namespace
}  // namespace riseml
