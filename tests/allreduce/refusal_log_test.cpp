// Refused connections are logged without letting a stranger flood the log: a few whole lines,
// then counts.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "transport/refusal_log.hpp"

namespace riseml {
namespace {

std::string read_all_text(std::FILE* f) {
  std::rewind(f);
  std::string s;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) s.append(buf, n);
  return s;
}

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(RefusalLog, AThousandRefusalsCostAFewLinesAndAreCounted) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    RefusalLog log(2, f, 3, std::chrono::hours(1));
    for (int i = 0; i < 1000; ++i) log.refused("a connection from 10.0.0.9:" + std::to_string(i) + " closed");
    EXPECT_EQ(log.total(), 1000);
  }
  const std::string text = read_all_text(f);
  std::fclose(f);
  EXPECT_LE(count_lines(text), 5) << text;
  EXPECT_NE(text.find("rank 2 refused a connection: a connection from 10.0.0.9:0 closed"),
            std::string::npos) << text;
  EXPECT_NE(text.find("refused 997 more connection(s) during setup (1000 in all)"),
            std::string::npos) << text;
  EXPECT_NE(text.find("10.0.0.9:999"), std::string::npos) << text;  // the latest is named
}

TEST(RefusalLog, SummariesComeAtMostOncePerInterval) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    RefusalLog log(0, f, 1, std::chrono::milliseconds(0));  // every refusal may summarize
    for (int i = 0; i < 4; ++i) log.refused("x");
  }
  const std::string text = read_all_text(f);
  std::fclose(f);
  EXPECT_NE(text.find("refused 1 more connection(s) so far (2 in all)"), std::string::npos) << text;
}

TEST(RefusalLog, NothingRefusedWritesNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  { RefusalLog log(0, f); }
  EXPECT_EQ(read_all_text(f), "");
  std::fclose(f);
}

}  // namespace
}  // namespace riseml
