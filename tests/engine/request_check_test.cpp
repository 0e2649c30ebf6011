// check_request and apply_equal_split: what a request is refused for at enqueue(), word for word.
#include "request_check.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace riseml::engine {
namespace {

// The message check_request throws for `r` on rank `rank` of `size`, or "" when it passes.
std::string refusal(const Request& r, int rank = 1, int size = 4) {
  try {
    check_request(r, rank, size);
  } catch (const CollectiveError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    return e.what();
  }
  return "";
}

float buf[16];

Request allreduce(std::vector<std::int64_t> shape = {4}) {
  Request r;
  r.name = "w";
  r.tensors.push_back({buf, buf, std::move(shape)});
  return r;
}

TEST(RequestCheck, AGoodAllreducePasses) { EXPECT_EQ(refusal(allreduce()), ""); }

TEST(RequestCheck, NamesTheOperationTensorAndRank) {
  Request r = allreduce();
  r.tensors.clear();
  EXPECT_EQ(refusal(r, 3), "riseml: allreduce 'w' on rank 3: no tensors given");
  r = allreduce();
  r.name.clear();
  EXPECT_EQ(refusal(r), "riseml: allreduce '' on rank 1: a name is required");
}

TEST(RequestCheck, BuffersAndShapes) {
  Request r = allreduce();
  r.tensors[0].input = nullptr;
  EXPECT_EQ(refusal(r), "riseml: allreduce 'w' on rank 1: null input buffer");
  r = allreduce();
  r.tensors[0].output = nullptr;
  EXPECT_EQ(refusal(r), "riseml: allreduce 'w' on rank 1: null output buffer");
  r = allreduce({0});  // empty: no buffers needed
  r.tensors[0].input = r.tensors[0].output = nullptr;
  EXPECT_EQ(refusal(r), "");
  r = allreduce({2, -3});
  EXPECT_EQ(refusal(r), "riseml: allreduce 'w' on rank 1: negative dimension in shape [2, -3]");
  r = allreduce();
  r.tensors.push_back({buf, buf, {4}, 0});
  EXPECT_EQ(refusal(r),
            "riseml: allreduce 'w' on rank 1: tensors on different devices (-1 and 0; -1 is host "
            "memory); move them to one device");
}

TEST(RequestCheck, AdasumAndScalingLimits) {
  Request r = allreduce();
  r.adasum = true;
  r.dtype = DataType::int32;
  EXPECT_EQ(refusal(r), "riseml: allreduce 'w' on rank 1: Adasum needs floating point tensors, not int32");
  r.dtype = DataType::float32;
  EXPECT_EQ(refusal(r), "");
  r.tensors[0].device = 0;
  EXPECT_EQ(refusal(r), "riseml: allreduce 'w' on rank 1: Adasum of GPU tensors is not supported; reduce host tensors");
  r.adasum = false;
  r.dtype = DataType::int64;
  r.prescale = 2.0;
  EXPECT_EQ(refusal(r), "");  // integers scale in double on the GPU too (Horovod's rule)
  r.tensors[0].device = -1;
  EXPECT_EQ(refusal(r), "");
}

// The GPU path's type rules: reductions need an NCCL type; broadcast and allgather move bytes.
TEST(RequestCheck, GpuTypeRules) {
  for (DataType t : {DataType::int16, DataType::boolean}) {
    Request r = allreduce();
    r.dtype = t;
    r.tensors[0].device = 0;
    EXPECT_EQ(refusal(r), "riseml: allreduce 'w' on rank 1: a reduction of " + std::string(to_string(t)) +
                              " GPU tensors is not supported (NCCL has no such type); reduce a "
                              "host tensor or cast to int32 / uint8");
    r.tensors[0].device = -1;
    EXPECT_EQ(refusal(r), "");
    r.tensors[0].device = 0;
    r.kind = OpKind::broadcast;
    EXPECT_EQ(refusal(r), "");
    r.kind = OpKind::allgather;
    r.tensors[0].output = nullptr;
    EXPECT_EQ(refusal(r), "");
  }
  // A reducescatter reduces: the same rule; an alltoall moves bytes: every type; Adasum is not
  // supported on GPU tensors.
  EXPECT_EQ(device_refusal(OpKind::reducescatter, DataType::int16, false),
            device_refusal(OpKind::allreduce, DataType::int16, false));
  EXPECT_EQ(device_refusal(OpKind::reducescatter, DataType::float32, false), "");
  EXPECT_EQ(device_refusal(OpKind::alltoall, DataType::int16, false), "");
  EXPECT_EQ(device_refusal(OpKind::alltoall, DataType::boolean, false), "");
  EXPECT_EQ(device_refusal(OpKind::allreduce, DataType::float32, true),
            "Adasum of GPU tensors is not supported; reduce host tensors");
}

TEST(RequestCheck, BroadcastRoot) {
  Request r = allreduce();
  r.kind = OpKind::broadcast;
  r.root = 4;
  EXPECT_EQ(refusal(r), "riseml: broadcast 'w' on rank 1: root rank 4 is not in [0, 4)");
  r.root = 3;
  EXPECT_EQ(refusal(r), "");
  r.tensors.push_back(r.tensors[0]);
  EXPECT_EQ(refusal(r), "riseml: broadcast 'w' on rank 1: exactly one tensor expected");
}

TEST(RequestCheck, GatherAndScatterNeedAFirstDimension) {
  Request r = allreduce({});
  r.kind = OpKind::allgather;
  r.tensors[0].output = nullptr;  // the engine allocates the result
  EXPECT_EQ(refusal(r), "riseml: allgather 'w' on rank 1: a scalar cannot be gathered (needs a first dimension)");
  r.tensors[0].shape = {3};
  EXPECT_EQ(refusal(r), "");
  r.kind = OpKind::reducescatter;
  r.tensors[0].shape = {};
  EXPECT_EQ(refusal(r), "riseml: reducescatter 'w' on rank 1: a scalar cannot be scattered (needs a first dimension)");
}

TEST(RequestCheck, ReducescatterNeedsAnOutputOnlyWhereRowsArrive) {
  Request r = allreduce({2, 3});  // 2 rows over 4 ranks: ranks 0 and 1 get one each
  r.kind = OpKind::reducescatter;
  r.tensors[0].output = nullptr;
  EXPECT_EQ(refusal(r, 1), "riseml: reducescatter 'w' on rank 1: null output buffer");
  EXPECT_EQ(refusal(r, 2), "");
  EXPECT_EQ(reducescatter_rows(2, 4, 1), 1);
  EXPECT_EQ(reducescatter_rows(2, 4, 2), 0);
  EXPECT_EQ(reducescatter_rows(10, 4, 0), 3);
  EXPECT_EQ(reducescatter_rows(10, 4, 3), 2);
}

TEST(RequestCheck, AlltoallSplits) {
  Request r = allreduce({6, 2});
  r.kind = OpKind::alltoall;
  r.splits = {1, 2, 3};
  EXPECT_EQ(refusal(r), "riseml: alltoall 'w' on rank 1: splits has 3 entries for 4 ranks");
  r.splits = {1, 2, 4, -1};
  EXPECT_EQ(refusal(r), "riseml: alltoall 'w' on rank 1: negative split -1");
  r.splits = {1, 2, 3, 1};
  EXPECT_EQ(refusal(r),
            "riseml: alltoall 'w' on rank 1: splits sum to 7 rows, but the tensor's first dimension is 6");
  r.splits = {1, 2, 3, 0};
  EXPECT_EQ(refusal(r), "");
}

TEST(RequestCheck, EqualSplitWhenTheFirstDimensionDivides) {
  Request r = allreduce({8, 2});
  r.kind = OpKind::alltoall;
  apply_equal_split(r, 1, 4);
  EXPECT_EQ(r.splits, (std::vector<std::int64_t>{2, 2, 2, 2}));
  Request odd = allreduce({6});
  odd.kind = OpKind::alltoall;
  try {
    apply_equal_split(odd, 2, 4);
    ADD_FAILURE() << "6 rows split over 4 ranks";
  } catch (const CollectiveError& e) {
    EXPECT_EQ(std::string(e.what()),
              "riseml: alltoall 'w' on rank 2: the first dimension 6 does not split evenly over 4 "
              "ranks; pass splits");
  }
  Request given = allreduce({6});
  given.kind = OpKind::alltoall;
  given.splits = {6, 0, 0, 0};
  apply_equal_split(given, 2, 4);
  EXPECT_EQ(given.splits, (std::vector<std::int64_t>{6, 0, 0, 0}));
  Request other = allreduce({6});
  apply_equal_split(other, 2, 4);
  EXPECT_TRUE(other.splits.empty());
}

TEST(RequestCheck, BarrierAndJoinNeedNothing) {
  Request r;
  r.kind = OpKind::barrier;
  EXPECT_EQ(refusal(r), "");
  r.kind = OpKind::join;
  EXPECT_EQ(refusal(r), "");
}

}  // namespace
}  // namespace riseml::engine
