// The response cache and the tensor table: ids, updates, capacity; entries in order of first
// appearance, a name reused after it finished.
#include "response_cache.hpp"
#include "tensor_table.hpp"

#include <gtest/gtest.h>

namespace riseml::engine {
namespace {

TensorMeta meta(std::int64_t n) {
  TensorMeta m;
  m.shapes = {{n}};
  return m;
}

TEST(ResponseCache, AnIdForANameWithTheSameMetadata) {
  ResponseCache cache;
  EXPECT_FALSE(cache.id_of("w", 0, meta(4)));
  cache.remember("w", {meta(4), meta(4)});
  cache.remember("b", {meta(1), meta(1)});
  EXPECT_EQ(cache.id_of("w", 1, meta(4)), 0u);
  EXPECT_EQ(cache.id_of("b", 0, meta(1)), 1u);
  EXPECT_FALSE(cache.id_of("w", 1, meta(5)));  // new shape: sent in full
  ASSERT_NE(cache.at(1), nullptr);
  EXPECT_EQ(cache.at(1)->name, "b");
  EXPECT_EQ(cache.at(2), nullptr);
}

TEST(ResponseCache, ANameKeepsItsIdWhenItsMetadataChanges) {
  ResponseCache cache;
  cache.remember("w", {meta(4), meta(4)});
  cache.remember("w", {meta(5), std::nullopt});  // rank 1 joined
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.id_of("w", 0, meta(5)), 0u);
  EXPECT_FALSE(cache.id_of("w", 1, meta(4)));
  EXPECT_FALSE(cache.at(0)->metas[1]);
}

TEST(ResponseCache, AFullCacheKeepsWhatItHas) {
  ResponseCache cache(2);
  cache.remember("a", {meta(1)});
  cache.remember("b", {meta(1)});
  cache.remember("c", {meta(1)});
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_FALSE(cache.id_of("c", 0, meta(1)));
  cache.remember("a", {meta(2)});  // updates still happen
  EXPECT_EQ(cache.id_of("a", 0, meta(2)), 0u);
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
