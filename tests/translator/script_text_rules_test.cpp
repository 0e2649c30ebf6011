// script_text_rules.hpp, printable_text.hpp and utf8.hpp: which characters a value may hold
// before it reaches the script, and how messages show the ones it may not.
#include <gtest/gtest.h>

#include "diagnostics.hpp"
#include "printable_text.hpp"
#include "script_text_rules.hpp"
#include "utf8.hpp"
#include "yaml_reader.hpp"

namespace riseml {
namespace {

std::string with(char c) {
  return std::string("a") + c + "b";
}

TEST(ScriptTextRules, OrdinaryTextIsFine) {
  for (auto kind : {ScriptText::one_line, ScriptText::commands, ScriptText::run_time_path}) {
    EXPECT_EQ(script_text_problem("", kind), std::nullopt);
    EXPECT_EQ(script_text_problem("pytorch/pytorch:2.1", kind), std::nullopt);
    // Other scripts, emoji and the no-break space are text, not control characters.
    EXPECT_EQ(script_text_problem("äöü ✓ 日本 \xF0\x9F\x9A\x80 \xC2\xA0", kind), std::nullopt);
  }
}

TEST(ScriptTextRules, OneLineRefusesEveryC0CharacterAndDel) {
  for (int c = 0; c < 0x20; ++c) {
    auto problem = script_text_problem(with(static_cast<char>(c)), ScriptText::one_line);
    ASSERT_TRUE(problem.has_value()) << c;
    EXPECT_NE(problem->find("after 'a': this value must be one line of text without control "
                            "characters; remove it"),
              std::string::npos)
        << *problem;
  }
  EXPECT_TRUE(script_text_problem(with('\x7f'), ScriptText::one_line).has_value());
}

TEST(ScriptTextRules, NamesTheCharacter) {
  auto name = [](char c) { return *script_text_problem(with(c), ScriptText::one_line); };
  EXPECT_EQ(name('\0').rfind("a NUL byte (\\0) after 'a'", 0), 0u) << name('\0');
  EXPECT_EQ(name('\n').rfind("a line break (\\n) after 'a'", 0), 0u) << name('\n');
  EXPECT_EQ(name('\r').rfind("a carriage return (\\r) after 'a'", 0), 0u) << name('\r');
  EXPECT_EQ(name('\t').rfind("a tab (\\t) after 'a'", 0), 0u) << name('\t');
  EXPECT_EQ(name('\x1b').rfind("an escape character (\\x1b) after 'a'", 0), 0u) << name('\x1b');
  EXPECT_EQ(name('\x07').rfind("the control character \\x07 after 'a'", 0), 0u) << name('\x07');
  EXPECT_EQ(name('\x7f').rfind("the control character \\x7f after 'a'", 0), 0u) << name('\x7f');
}

TEST(ScriptTextRules, RefusesC1Characters) {
  // U+0080-U+009F: NEL is a line break to some programs, CSI starts terminal sequences.
  for (int c = 0x80; c <= 0x9F; ++c) {
    const std::string text = std::string("a\xC2") + static_cast<char>(c) + "b";
    auto problem = script_text_problem(text, ScriptText::commands);
    ASSERT_TRUE(problem.has_value()) << c;
    char expected[32];
    std::snprintf(expected, sizeof expected, "the control character \\u%04x", c);
    EXPECT_EQ(problem->rfind(expected, 0), 0u) << *problem;
  }
}

TEST(ScriptTextRules, RefusesBytesThatAreNotUtf8) {
  // yaml-cpp writes the escapes \N and \_ as the single bytes 0x85 and 0xA0.
  auto problem = script_text_problem("ubuntu\xA0", ScriptText::one_line);
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(*problem,
            "the byte \\xa0, which is not UTF-8, after 'ubuntu': write the character itself, in "
            "UTF-8 (not as \\N or \\_)");
  EXPECT_TRUE(script_text_problem("\xED\xA0\x80", ScriptText::commands).has_value());
}

TEST(ScriptTextRules, CommandsMayHoldLineBreaksAndTabsOnly) {
  EXPECT_EQ(script_text_problem("echo a\n\techo b\n", ScriptText::commands), std::nullopt);
  for (char c : {'\0', '\r', '\x1b', '\x01', '\x7f', '\v', '\f'}) {
    auto problem = script_text_problem("echo a\n" + with(c), ScriptText::commands);
    ASSERT_TRUE(problem.has_value()) << int(c);
    EXPECT_NE(problem->find("a command may hold line breaks and tabs but no other control "
                            "characters; remove it"),
              std::string::npos)
        << *problem;
  }
}

TEST(ScriptTextRules, SaysWhereInALongValue) {
  EXPECT_EQ(script_text_problem("\nx", ScriptText::one_line)
                ->rfind("a line break (\\n) at the "
                        "start:",
                        0),
            0u);
  const std::string long_text = std::string(100, 'x') + "äöü" + std::string(25, 'y') + "\x1b";
  auto problem = script_text_problem(long_text, ScriptText::one_line);
  // The 30 bytes before it, not cutting the 'ö' in half.
  EXPECT_EQ(
      problem->rfind("an escape character (\\x1b) after '...öü" + std::string(25, 'y') + "'", 0),
      0u)
      << *problem;
}

TEST(ScriptTextRules, RunTimePathExpandsOnlyVariables) {
  for (const char* ok : {"/scratch/riseml", "/scratch/$USER", "${SLURM_SUBMIT_DIR}/out",
                         "/a/${HOME}x/$_b9/{c", "relative/path-1.2"}) {
    EXPECT_EQ(script_text_problem(ok, ScriptText::run_time_path), std::nullopt) << ok;
  }
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"/x/$(touch y)", "'$' after '/x/' starts no variable name"},
      {"/x/`id`", "a backquote (`) after '/x/'"},
      {"/x/\"; id; \"", "a double quote (\") after '/x/'"},
      {"/x\\y", "a backslash (\\) after '/x'"},
      {"/x/'y'", "a single quote (') after '/x/'"},
      {"/x}/y", "a closing brace (}) after '/x'"},
      {"/x/${HOME", "'${' after '/x/' is not ${NAME}"},
      {"/x/${}", "'$' after '/x/' starts no variable name"},
      {"/x/$1", "'$' after '/x/' starts no variable name"},
      {"/x/$", "'$' after '/x/' starts no variable name"},
      {"/x/${HOME:-/y}", "'${' after '/x/' is not ${NAME}"},
      {"/x\n/y", "a line break (\\n) after '/x'"},
  };
  for (const auto& [text, start] : refused) {
    auto problem = script_text_problem(text, ScriptText::run_time_path);
    ASSERT_TRUE(problem.has_value()) << text;
    EXPECT_EQ(problem->rfind(start, 0), 0u) << *problem;
  }
  EXPECT_NE(script_text_problem("/x/`id`", ScriptText::run_time_path)
                ->find(": the path is written inside double quotes in the script, where only "
                       "$NAME and ${NAME} expand; remove it"),
            std::string::npos);
}

TEST(PrintableText, EscapesControlCharactersAndBadBytes) {
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\0b");
  EXPECT_EQ(printable("\t\n\r"), "\\t\\n\\r");
  EXPECT_EQ(printable("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(printable("\x01\x7f"), "\\x01\\x7f");
  EXPECT_EQ(printable("\xC2\x85\xC2\x9B"), "\\u0085\\u009b");
  EXPECT_EQ(printable("\x85\xA0\xFF"), "\\x85\\xa0\\xff");
  EXPECT_EQ(printable("\xE2\x9C"), "\\xe2\\x9c");  // cut short
  EXPECT_EQ(printable("äöü ✓ 日本 \xC2\xA0 \\n"), "äöü ✓ 日本 \xC2\xA0 \\n");
}

TEST(PrintableText, EveryByteComesOutPrintable) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const std::string out = printable(all);
  EXPECT_EQ(first_non_utf8(out), std::nullopt);
  for (unsigned char c : out) {
    EXPECT_GE(c, 0x20);
    EXPECT_NE(c, 0x7f);
  }
}

TEST(PrintableText, DiagnosticsEscapeFileKeyAndMessage) {
  Diagnostics diags;
  diags.error({"evil\x1b].yml", 3, 4}, "train.\x1b[2J", "'x\ny' is bad\r");
  EXPECT_EQ(diags.format(), "evil\\x1b].yml:3:4: error: train.\\x1b[2J: 'x\\ny' is bad\\r\n");
}

TEST(Utf8, PrefixAndSuffixDoNotCutACharacter) {
  const std::string text = "aöb";  // ö is two bytes
  EXPECT_EQ(utf8_prefix(text, 2), "a");
  EXPECT_EQ(utf8_prefix(text, 3), "aö");
  EXPECT_EQ(utf8_prefix(text, 10), text);
  EXPECT_EQ(utf8_suffix(text, 2), "b");
  EXPECT_EQ(utf8_suffix(text, 3), "öb");
  EXPECT_EQ(utf8_suffix(text, 10), text);
}

TEST(Utf8, DescribeCutsLongValuesAtACharacter) {
  YAML::Node node(std::string(36, 'x') + "日本語");
  const std::string shown = YamlReader::describe(node);
  EXPECT_EQ(shown, "'" + std::string(36, 'x') + "...'");
  EXPECT_EQ(first_non_utf8(shown), std::nullopt);
}

}  // namespace
}  // namespace riseml
