// did_you_mean.hpp: the suggestion for a misspelt key or name.
#include <gtest/gtest.h>

#include "did_you_mean.hpp"

namespace riseml {
namespace {

const std::vector<std::string> kTrainKeys = {"image", "install", "run", "resources", "framework",
                                             "tensorflow", "parameters", "concurrency", "horovod"};

TEST(EditDistance, Basics) {
  EXPECT_EQ(edit_distance("", ""), 0);
  EXPECT_EQ(edit_distance("abc", ""), 3);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3);
  EXPECT_EQ(edit_distance("ab", "ba"), 1) << "a transposition is one edit";
  EXPECT_EQ(edit_distance("num_layers", "num-layers"), 0) << "'-' and '_' are the same";
  EXPECT_EQ(edit_distance("GPUS", "gpus"), 0) << "case is ignored";
}

TEST(DidYouMean, CommonTypos) {
  EXPECT_EQ(closest_match("resurces", kTrainKeys), "resources");
  EXPECT_EQ(closest_match("paramters", kTrainKeys), "parameters");
  EXPECT_EQ(closest_match("concurency", kTrainKeys), "concurrency");
  EXPECT_EQ(closest_match("tensorfow", kTrainKeys), "tensorflow");
  EXPECT_EQ(closest_match("imgae", kTrainKeys), "image");
  EXPECT_EQ(closest_match("hororvod", kTrainKeys), "horovod");
}

TEST(DidYouMean, NoSuggestionForUnrelatedWords) {
  EXPECT_EQ(closest_match("description", kTrainKeys), std::nullopt);
  EXPECT_EQ(closest_match("xyz", kTrainKeys), std::nullopt);
  EXPECT_EQ(closest_match("anything", {}), std::nullopt);
  EXPECT_EQ(closest_match(std::string(100, 'r'), kTrainKeys), std::nullopt) << "long input";
}

TEST(DidYouMean, ShortWordsAllowOneEdit) {
  EXPECT_EQ(closest_match("rn", kTrainKeys), "run");
  EXPECT_EQ(closest_match("lr", {"lr-decay", "epochs"}), std::nullopt);
}

TEST(DidYouMean, Phrase) {
  EXPECT_EQ(did_you_mean("resurces", kTrainKeys), " (did you mean 'resources'?)");
  EXPECT_EQ(did_you_mean("zzzzzz", kTrainKeys), "");
}

}  // namespace
}  // namespace riseml
