// The rules a table entry is judged by: ready, the join rule, agreement, busy_elsewhere. The
// messages and culprit ranks are what every rank's handle reports.
#include "agreement.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace riseml::engine {
namespace {

TensorMeta meta(OpKind kind = OpKind::allreduce, std::vector<std::int64_t> shape = {4}) {
  TensorMeta m;
  m.kind = kind;
  m.shapes.push_back(std::move(shape));
  return m;
}

// An entry of `size` ranks with `metas` given for some of them.
TableEntry entry(std::vector<MetaRef> metas, std::string name = "w") {
  TableEntry e;
  e.name = std::move(name);
  e.metas = std::move(metas);
  return e;
}

// The error's text and culprit, or "" when there is none.
std::string text(const std::optional<CollectiveError>& e) { return e ? e->what() : ""; }

TEST(Agreement, ReadyWhenEveryRankSentOrJoined) {
  const TableEntry e = entry({meta(), std::nullopt, meta()});
  EXPECT_FALSE(is_ready(e, {false, false, false}));
  EXPECT_TRUE(is_ready(e, {false, true, false}));
}

TEST(Agreement, OnlyAllreduceAndBarrierGoOnWhileRanksHaveJoined) {
  EXPECT_EQ(text(check_join_rule(entry({meta(), std::nullopt}), {false, true})), "");
  EXPECT_EQ(text(check_join_rule(entry({meta(OpKind::barrier), std::nullopt}), {false, true})), "");
  const auto one = check_join_rule(entry({meta(OpKind::broadcast), std::nullopt, meta(OpKind::broadcast)}),
                                   {false, true, false});
  EXPECT_EQ(text(one),
            "riseml: broadcast 'w' cannot run while rank 1 has joined (only allreduce goes on with "
            "joined ranks, as in Horovod); finish it before join()");
  EXPECT_EQ(one->kind(), ErrorKind::mismatch);
  EXPECT_EQ(one->culprit_rank(), 1);
  const auto two = check_join_rule(entry({meta(OpKind::allgather), std::nullopt, std::nullopt}),
                                   {false, true, true});
  EXPECT_NE(text(two).find("while ranks 1, 2 have joined"), std::string::npos) << text(two);
  // A joined rank that submitted it before joining is no obstacle.
  EXPECT_EQ(text(check_join_rule(entry({meta(OpKind::broadcast), meta(OpKind::broadcast)}), {false, true})), "");
}

TEST(Agreement, AgreedEntriesPass) {
  EXPECT_EQ(text(check_agreement(entry({meta(), meta(), std::nullopt}))), "");
}

TEST(Agreement, ShapesNameEveryValueWithItsRanks) {
  const auto e = check_agreement(entry({meta(), meta(OpKind::allreduce, {5}), meta()}));
  EXPECT_EQ(text(e), "riseml: mismatched shapes for allreduce 'w': ranks 0, 2: [4]; rank 1: [5]");
  EXPECT_EQ(e->kind(), ErrorKind::mismatch);
  EXPECT_EQ(e->culprit_rank(), 1);
}

TEST(Agreement, AspectsAreCheckedInOrder) {
  TensorMeta a = meta(), b = meta(OpKind::broadcast, {5});
  b.dtype = DataType::float64;
  EXPECT_EQ(text(check_agreement(entry({a, b}))),
            "riseml: mismatched operations for allreduce 'w': rank 0: allreduce; rank 1: broadcast");
  b.kind = OpKind::allreduce;
  EXPECT_EQ(text(check_agreement(entry({a, b}))),
            "riseml: mismatched data types for allreduce 'w': rank 0: float32; rank 1: float64");
  b.dtype = DataType::float32;
  b.on_device = true;
  EXPECT_EQ(text(check_agreement(entry({a, b}))),
            "riseml: mismatched memory (every rank must pass GPU tensors, or every rank host "
            "tensors) for allreduce 'w': rank 0: host; rank 1: GPU");
  b.on_device = false;
  b.adasum = true;
  EXPECT_EQ(text(check_agreement(entry({a, b}))),
            "riseml: mismatched reduce operations for allreduce 'w': rank 0: sum; rank 1: adasum");
  b.adasum = false;
  b.prescale = 0.5;
  EXPECT_EQ(text(check_agreement(entry({a, b}))),
            "riseml: mismatched scale factors for allreduce 'w': rank 0: prescale 1, postscale 1; "
            "rank 1: prescale 0.5, postscale 1");
  b.prescale = 1.0;
  b.shapes.push_back({1});
  EXPECT_EQ(text(check_agreement(entry({a, b}))),
            "riseml: mismatched tensor counts for allreduce 'w': rank 0: 1; rank 1: 2");
}

TEST(Agreement, BroadcastRootsAndGatherShapesButTheFirstDimension) {
  TensorMeta a = meta(OpKind::broadcast), b = a;
  b.root = 2;
  EXPECT_EQ(text(check_agreement(entry({a, b}, "b"))),
            "riseml: mismatched root ranks for broadcast 'b': rank 0: 0; rank 1: 2");
  const TensorMeta g1 = meta(OpKind::allgather, {3, 2}), g2 = meta(OpKind::allgather, {5, 2});
  EXPECT_EQ(text(check_agreement(entry({g1, g2}))), "");
  const TensorMeta g3 = meta(OpKind::allgather, {5, 3});
  EXPECT_EQ(text(check_agreement(entry({g1, g3}, "g"))),
            "riseml: mismatched shapes (all but the first dimension must agree) for allgather 'g': "
            "rank 0: [*, 2]; rank 1: [*, 3]");
}

TEST(Agreement, BusyElsewhereLooksAtOtherCollectivesNotBarriers) {
  TensorTable table(3);
  const auto now = TensorTable::Clock::now();
  table.record("barrier.0", 0, meta(OpKind::barrier, {}), now);
  table.record("barrier.1", 2, meta(OpKind::barrier, {}), now);
  table.record("w", 1, meta(), now);
  const TableEntry& barrier = table.begin()->second;
  EXPECT_TRUE(busy_elsewhere(table, {1}, barrier));
  EXPECT_FALSE(busy_elsewhere(table, {2}, barrier));  // only in another barrier
  EXPECT_FALSE(busy_elsewhere(table, {}, barrier));
}

}  // namespace
}  // namespace riseml::engine
