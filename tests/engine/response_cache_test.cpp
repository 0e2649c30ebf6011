// The response cache and the tensor table: ids, updates, capacity; entries in order of first
// appearance, a name reused after it finished, erased entries reused; a request compared with
// cached metadata without building its own (describes), shared metadata (MetaRef).
#include "response_cache.hpp"
#include "tensor_table.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace riseml::engine {
namespace {

TensorMeta meta(std::int64_t n) {
  TensorMeta m;
  m.shapes = {{n}};
  return m;
}

// A request whose metadata is meta(n).
Request request(std::int64_t n) {
  Request r;
  r.tensors.push_back({nullptr, nullptr, {n}, -1});
  return r;
}

TEST(ResponseCache, AnIdForANameWithTheSameMetadata) {
  ResponseCache cache;
  EXPECT_FALSE(cache.id_of("w", 0, request(4)));
  cache.remember("w", {meta(4), meta(4)});
  cache.remember("b", {meta(1), meta(1)});
  EXPECT_EQ(cache.id_of("w", 1, request(4)), 0u);
  EXPECT_EQ(cache.id_of("b", 0, request(1)), 1u);
  EXPECT_FALSE(cache.id_of("w", 1, request(5)));  // new shape: sent in full
  ASSERT_NE(cache.at(1), nullptr);
  EXPECT_EQ(cache.at(1)->name, "b");
  EXPECT_EQ(cache.at(2), nullptr);
}

TEST(ResponseCache, ANameKeepsItsIdWhenItsMetadataChanges) {
  ResponseCache cache;
  cache.remember("w", {meta(4), meta(4)});
  cache.remember("w", {meta(5), std::nullopt});  // rank 1 joined
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.id_of("w", 0, request(5)), 0u);
  EXPECT_FALSE(cache.id_of("w", 1, request(4)));
  EXPECT_FALSE(cache.at(0)->metas[1]);
}

TEST(ResponseCache, AFullCacheKeepsWhatItHas) {
  ResponseCache cache(2);
  cache.remember("a", {meta(1)});
  cache.remember("b", {meta(1)});
  cache.remember("c", {meta(1)});
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_FALSE(cache.id_of("c", 0, request(1)));
  cache.remember("a", {meta(2)});  // updates still happen
  EXPECT_EQ(cache.id_of("a", 0, request(2)), 0u);
  EXPECT_EQ(ResponseCache::kDefaultCapacity, 4096u);
}

TEST(TensorTable, EntriesInOrderOfFirstAppearance) {
  TensorTable table(2);
  const auto t0 = TensorTable::Clock::now();
  table.record("b", 1, meta(1), t0);
  table.record("a", 0, meta(2), t0 + std::chrono::seconds(1));
  table.record("b", 0, meta(1), t0 + std::chrono::seconds(2));
  std::vector<std::string> names;
  for (const auto& [seq, e] : table) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"b", "a"}));
  TableEntry* b = table.find("b", 0);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->first_seen, t0);
  EXPECT_TRUE(b->metas[0] && b->metas[1]);
  EXPECT_EQ(table.find("b", 1), nullptr);  // another entry's sequence number
  EXPECT_EQ(table.find("c", 0), nullptr);
}

TEST(TensorTable, AClosedNameStartsANewEntry) {
  TensorTable table(2);
  const auto now = TensorTable::Clock::now();
  table.record("w", 0, meta(1), now);
  TableEntry* first = table.find("w", 0);
  table.close("w");
  first->metas.clear();  // finished
  table.record("w", 1, meta(1), now);  // the next submission, before the old entry is erased
  EXPECT_EQ(table.find("w", 0), nullptr);
  ASSERT_NE(table.find("w", 1), nullptr);
  EXPECT_TRUE(table.erase_finished());
  EXPECT_FALSE(table.erase_finished());
  EXPECT_FALSE(table.empty());
  EXPECT_EQ(table.begin()->first, 1u);
}

TEST(TensorTable, AnErasedEntrysSlotComesBackAsANewEntry) {
  // Erased entries are reused for the next names (their memory kept): nothing of the old
  // entry may show through, and names of any length and order find their own entry.
  TensorTable table(3);
  const auto t0 = TensorTable::Clock::now();
  const std::string long_name = "allreduce.module.encoder.layer.11.attention.output.dense.weight";
  table.record(long_name, 0, meta(1), t0);
  table.record("b", 2, meta(2), t0);
  for (auto& [seq, e] : table) {
    e.warned = true;
    e.verdict_sent = true;
    e.metas.clear();
  }
  table.close(long_name);
  table.close("b");
  EXPECT_TRUE(table.erase_finished());
  EXPECT_TRUE(table.empty());
  const auto t1 = t0 + std::chrono::seconds(5);
  table.record("c", 1, meta(7), t1);
  table.record(long_name + ".bias", 0, meta(8), t1);
  table.record("c", 0, meta(7), t1);
  std::vector<std::string> names;
  for (const auto& [seq, e] : table) {
    names.push_back(e.name);
    EXPECT_FALSE(e.warned);
    EXPECT_FALSE(e.verdict_sent);
    EXPECT_EQ(e.first_seen, t1);
    EXPECT_EQ(e.metas.size(), 3u);
    EXPECT_FALSE(e.metas[2]);  // the old entry's rank 2 shows nowhere
  }
  EXPECT_EQ(names, (std::vector<std::string>{"c", long_name + ".bias"}));
  TableEntry* c = table.find("c", 2);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->metas[0] && c->metas[1]);
  EXPECT_EQ(c->metas[1]->shapes[0][0], 7);
  ASSERT_NE(table.find(long_name + ".bias", 3), nullptr);
  EXPECT_EQ(table.find(long_name, 0), nullptr);  // closed, erased
}

TEST(ResponseCache, ARequestIsComparedWithoutBuildingItsMetadata) {
  Request r;
  r.name = "w";
  r.tensors.push_back({nullptr, nullptr, {4, 2}, -1});
  ResponseCache cache;
  cache.remember("w", {meta_of(r), std::nullopt});
  EXPECT_EQ(cache.id_of("w", 0, r), 0u);
  EXPECT_FALSE(cache.id_of("w", 1, r));  // rank 1 sent nothing
  EXPECT_FALSE(cache.id_of("v", 0, r));
  r.tensors[0].shape = {4, 3};
  EXPECT_FALSE(cache.id_of("w", 0, r));
}

TEST(Wire, DescribesAgreesWithMetaOfInEveryField) {
  Request base;
  base.name = "w";
  base.tensors.push_back({nullptr, nullptr, {4, 2}, -1});
  base.tensors.push_back({nullptr, nullptr, {3}, -1});
  EXPECT_TRUE(describes(meta_of(base), base));
  const TensorMeta m = meta_of(base);
  std::vector<std::pair<const char*, std::function<void(Request&)>>> changes = {
      {"kind", [](Request& r) { r.kind = OpKind::broadcast; }},
      {"dtype", [](Request& r) { r.dtype = DataType::float16; }},
      {"op", [](Request& r) { r.op = ReduceOp::max; }},
      {"root", [](Request& r) { r.root = 1; }},
      {"prescale", [](Request& r) { r.prescale = 0.5; }},
      {"postscale", [](Request& r) { r.postscale = 2.0; }},
      {"adasum", [](Request& r) { r.adasum = true; }},
      {"device", [](Request& r) { r.tensors[0].device = 0; }},
      {"splits", [](Request& r) { r.splits = {1, 3}; }},
      {"a shape", [](Request& r) { r.tensors[1].shape = {4}; }},
      {"a dimension more", [](Request& r) { r.tensors[1].shape = {3, 1}; }},
      {"a tensor more", [](Request& r) { r.tensors.push_back({nullptr, nullptr, {1}, -1}); }},
      {"a tensor less", [](Request& r) { r.tensors.pop_back(); }},
  };
  for (const auto& [what, change] : changes) {
    Request r = base;
    change(r);
    EXPECT_FALSE(describes(m, r)) << what;
    EXPECT_TRUE(describes(meta_of(r), r)) << what;
    EXPECT_EQ(describes(m, r), m == meta_of(r)) << what;
  }
}

TEST(MetaRef, ComparesByValue) {
  const MetaRef a = meta(1), b = meta(1), c = meta(2), none;
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == c);
  EXPECT_FALSE(a == none);
  EXPECT_TRUE(none == MetaRef(std::nullopt));
  const MetaRef shared = a;
  EXPECT_EQ(&*shared, &*a);  // a copy shares, it does not copy the shapes
}

TEST(TensorTable, ReferenceIsTheFirstRankThatSent) {
  TableEntry e;
  e.name = "w";
  e.metas = {std::nullopt, meta(3), meta(4)};
  EXPECT_EQ(reference(e).shapes[0][0], 3);
  e.metas = {std::nullopt, std::nullopt};
  EXPECT_THROW(reference(e), CollectiveError);
}

}  // namespace
}  // namespace riseml::engine
