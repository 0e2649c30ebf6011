// shell_quote.hpp: whatever the text, bash reads the quoted form back as exactly that text.
#include <gtest/gtest.h>

#include "shell_quote.hpp"
#include "test_support.hpp"

namespace riseml::test {
namespace {

TEST(ShellQuote, Form) {
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("abc"), "'abc'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

// Runs `bash -c "printf %s <quoted>"` and returns what bash printed.
std::string through_bash(const std::string& text) {
  CommandResult r = run_command({"bash", "-c", "printf %s " + shell_quote(text)});
  EXPECT_EQ(r.status, 0) << r.err;
  return r.out;
}

TEST(ShellQuote, RoundTripsTrickyStringsThroughBash) {
  const std::vector<std::string> tricky = {
      "",
      "plain",
      "two words",
      "it's",
      "''",
      "'",
      "\"double\" quotes",
      "$HOME ${HOME} $(echo no) `echo no`",
      "back\\slash \\' \\\\",
      "!history !! !$",
      "glob * ? [a-z] ~",
      "semi; pipe | amp & redirect > < >>",
      "new\nline\n",
      "tab\there",
      "-n",
      "%s %d %%",
      "unicode: äöü ✓ 日本",
      std::string("control \x01\x1b[31m bytes"),
      "{{lr}} {a,b}",
      "# not a comment",
      "'\"'\"'",
  };
  for (const auto& text : tricky) EXPECT_EQ(through_bash(text), text) << shell_quote(text);
}

TEST(ShellQuote, RoundTripsEveryByteButNul) {
  std::string all;
  for (int c = 1; c < 256; ++c) all += static_cast<char>(c);
  EXPECT_EQ(through_bash(all), all);
}

}  // namespace
}  // namespace riseml::test
