#include "line_forwarder.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace riseml::launch {
namespace {

struct Collected {
  std::vector<std::string> batches;
  LineForwarder::Sink sink() {
    return [this](std::string_view lines) { batches.emplace_back(lines); };
  }
  std::string all() const {
    std::string text;
    for (const auto& batch : batches) text += batch;
    return text;
  }
};

TEST(LineForwarder, PrefixesEveryWholeLine) {
  Collected out;
  LineForwarder forwarder("[3] ", out.sink());
  forwarder.feed("one\ntwo\n");
  EXPECT_EQ(out.all(), "[3] one\n[3] two\n");
  EXPECT_EQ(out.batches.size(), 1u);  // one write per chunk keeps lines whole
}

TEST(LineForwarder, HoldsAPartialLineUntilItEnds) {
  Collected out;
  LineForwarder forwarder("[0] ", out.sink());
  forwarder.feed("hel");
  EXPECT_TRUE(out.batches.empty());
  forwarder.feed("lo\nwor");
  EXPECT_EQ(out.all(), "[0] hello\n");
  forwarder.finish();
  EXPECT_EQ(out.all(), "[0] hello\n[0] wor\n");
}

TEST(LineForwarder, WithoutPrefixPassesLinesUnchanged) {
  Collected out;
  LineForwarder forwarder("", out.sink());
  forwarder.feed("a\n\nb\n");
  forwarder.finish();
  EXPECT_EQ(out.all(), "a\n\nb\n");
}

TEST(LineForwarder, CutsOverlongLinesIntoBoundedPieces) {
  Collected out;
  LineForwarder forwarder("[1] ", out.sink(), 4);
  forwarder.feed("abcdefghij\n");
  EXPECT_EQ(out.all(), "[1] abcd\n[1] efgh\n[1] ij\n");
}

TEST(LineForwarder, ALineOfExactlyTheLimitStaysOneLine) {
  Collected out;
  LineForwarder forwarder("", out.sink(), 4);
  forwarder.feed("abcd");
  forwarder.feed("\nef\n");
  EXPECT_EQ(out.all(), "abcd\nef\n");
}

TEST(LineForwarder, FinishOnAnEmptyStreamWritesNothing) {
  Collected out;
  LineForwarder forwarder("[0] ", out.sink());
  forwarder.finish();
  EXPECT_TRUE(out.batches.empty());
}

}  // namespace
}  // namespace riseml::launch
