// Inputs too big to check in, generated here: a file over the size limit, 10000 nested lists,
// 10000 nested maps, a long flat sweep. Each is refused quickly with one clear error, and
// nothing crashes (run under ASan/UBSan too).
#include <chrono>

#include <gtest/gtest.h>

#include "test_support.hpp"
#include "yaml_document.hpp"

namespace riseml::test {
namespace {

std::string valid_head() {
  return "project: my-project\ntrain:\n  resources: {gpus: 1, cpus: 4, mem: 8192}\n"
         "  run: python train.py\n";
}

struct Timed {
  Translation t;
  double seconds;
};

Timed timed_translate(const std::string& text) {
  auto start = std::chrono::steady_clock::now();
  Translation t = translate_with_defaults(text, "riseml.yml");
  std::chrono::duration<double> d = std::chrono::steady_clock::now() - start;
  return {std::move(t), d.count()};
}

TEST(HostileInput, FileOverTheSizeLimit) {
  std::string text = valid_head() + "# " + std::string(kMaxYamlBytes, 'x') + "\n";
  auto r = timed_translate(text);
  EXPECT_FALSE(r.t.script);
  EXPECT_EQ(r.t.diagnostics.format(),
            "riseml.yml: error: the file is " + std::to_string(text.size()) +
                " bytes; the limit is 1048576: is this really a riseml.yml?\n");
  EXPECT_LT(r.seconds, 5.0);
}

TEST(HostileInput, FileJustUnderTheSizeLimitStillTranslates) {
  std::string text = valid_head();
  text += "# " + std::string(kMaxYamlBytes - text.size() - 3, 'x') + "\n";
  ASSERT_EQ(text.size(), kMaxYamlBytes);
  auto r = timed_translate(text);
  EXPECT_TRUE(r.t.script.has_value()) << r.t.diagnostics.format();
  EXPECT_LT(r.seconds, 5.0);
}

TEST(HostileInput, TenThousandNestedLists) {
  std::string text = valid_head() + "deep: " + std::string(10000, '[') + std::string(10000, ']') +
                     "\n";
  auto r = timed_translate(text);
  EXPECT_FALSE(r.t.script);
  EXPECT_EQ(r.t.diagnostics.error_count(), 1) << r.t.diagnostics.format();
  EXPECT_NE(r.t.diagnostics.format().find("error: nesting too deep to be a riseml.yml: check the "
                                          "brackets and indentation"),
            std::string::npos)
      << r.t.diagnostics.format();
  EXPECT_LT(r.seconds, 5.0);
}

TEST(HostileInput, TenThousandNestedFlowMaps) {
  std::string text = valid_head() + "deep: ";
  for (int i = 0; i < 10000; ++i) text += "{a: ";
  text += "1" + std::string(10000, '}') + "\n";
  auto r = timed_translate(text);
  EXPECT_FALSE(r.t.script);
  EXPECT_EQ(r.t.diagnostics.error_count(), 1) << r.t.diagnostics.format();
  EXPECT_NE(r.t.diagnostics.format().find("error: nesting too deep"), std::string::npos)
      << r.t.diagnostics.format();
  EXPECT_LT(r.seconds, 5.0);
}

TEST(HostileInput, DeepBlockMapsUnderTheSizeLimit) {
  // Block maps indent one more space per level, so 1400 levels (~1 MB) is as deep as fits
  // under the size limit; the flow-map test above goes to 10000.
  std::string text = valid_head() + "deep:\n";
  for (int i = 1; i <= 1400; ++i) text += std::string(static_cast<size_t>(i), ' ') + "a:\n";
  ASSERT_LT(text.size(), kMaxYamlBytes);
  auto r = timed_translate(text);
  EXPECT_FALSE(r.t.script);
  EXPECT_EQ(r.t.diagnostics.error_count(), 1) << r.t.diagnostics.format();
  EXPECT_NE(r.t.diagnostics.format().find("error: nesting "), std::string::npos)
      << r.t.diagnostics.format();
  EXPECT_LT(r.seconds, 5.0);
}

TEST(HostileInput, NestingJustPastTheStructureLimit) {
  // Deep enough for the translator's own limit (32), shallow enough for yaml-cpp.
  std::string text = valid_head() + "deep: " + std::string(40, '[') + std::string(40, ']') + "\n";
  auto r = timed_translate(text);
  EXPECT_FALSE(r.t.script);
  EXPECT_EQ(r.t.diagnostics.format(),
            "riseml.yml:5:39: error: nesting deeper than 32 levels; a riseml.yml nests at most 5 "
            "levels: check the indentation\n");
}

TEST(HostileInput, ManyParametersOverflowingTheCombinationCount) {
  // 70 parameters of 2 values: 2^70 combinations, more than size_t holds.
  std::string text = "project: my-project\ntrain:\n  resources: {cpus: 1}\n  parameters:\n";
  std::string run = "  run: python train.py";
  for (int i = 0; i < 70; ++i) {
    text += "    p" + std::to_string(i) + ": [1, 2]\n";
    run += " {{p" + std::to_string(i) + "}}";
  }
  auto r = timed_translate(text + run + "\n");
  EXPECT_FALSE(r.t.script);
  EXPECT_EQ(r.t.diagnostics.format(),
            "riseml.yml:5:5: error: train.parameters: the sweep has too many combinations; this "
            "cluster runs at most 1001 per job array (MaxArraySize): sweep fewer values\n");
  EXPECT_LT(r.seconds, 5.0);
}

TEST(HostileInput, ManyAnchorsReferencedOnceEachAreFine) {
  // Aliases are not bad in themselves: only a blow-up is.
  std::string text = valid_head() + "x-defaults: &d {a: 1}\nx-use: [*d, *d, *d]\n";
  auto r = timed_translate(text);
  EXPECT_FALSE(r.t.script) << "x-defaults is not a key we know";
  EXPECT_NE(r.t.diagnostics.format().find("error: x-defaults: unknown key"), std::string::npos)
      << r.t.diagnostics.format();
}

// std::regex recurses once per character: a 30000-character scalar crashed the translator
// (stack overflow) where it was checked with a regex. Every checked scalar, 500 KB long.
TEST(HostileInput, LongScalarsDoNotOverflowTheStack) {
  const std::string digits(500000, '1'), letters(500000, 'a');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"gpus", "project: p\ntrain:\n  resources: {gpus: " + digits + "}\n  run: x\n"},
      {"cpus", "project: p\ntrain:\n  resources: {cpus: " + digits + "}\n  run: x\n"},
      {"mem", "project: p\ntrain:\n  resources: {mem: " + digits + ".5}\n  run: x\n"},
      {"project", "project: " + letters + "\ntrain:\n  run: x\n"},
      {"version", "project: p\ntrain:\n  tensorflow: {version: " + digits + "}\n  run: x\n"},
      {"time", "project: p\ntrain:\n  run: x\nslurm: {time: '" + digits + "'}\n"},
      {"signal", "project: p\ntrain:\n  run: x\nslurm: {signal: " + letters + "}\n"},
      {"mail", "project: p\ntrain:\n  run: x\nslurm: {mail: {type: " + letters + "}}\n"},
      {"module", "project: p\ntrain:\n  run: x\nslurm: {modules: [" + letters + "]}\n"},
      {"parameter", "project: p\ntrain:\n  run: x\n  parameters:\n    ? " + letters + "\n    : 1\n"},
      {"variable", "project: p\ntrain:\n  run: x\nslurm:\n  environment:\n    ? " + letters +
                       "\n    : 1\n"},
      {"range", "project: p\ntrain:\n  run: x\n  parameters: {a: {range: {min: " + digits +
                    ", max: 1, step: 1}}}\n"},
  };
  for (const auto& [what, text] : cases) {
    auto r = timed_translate(text);  // getting here without a crash is the test
    EXPECT_LT(r.seconds, 5.0) << what;
  }
}

TEST(HostileInput, LongIntegerIsTooLargeNotMalformed) {
  auto r = timed_translate("project: p\ntrain:\n  resources: {gpus: " + std::string(100, '9') +
                           "}\n  run: x\n");
  EXPECT_NE(r.t.diagnostics.format().find("error: train.resources.gpus: the number '9999"),
            std::string::npos)
      << r.t.diagnostics.format();
  EXPECT_NE(r.t.diagnostics.format().find("is too large"), std::string::npos);
}

TEST(HostileInput, RepeatedUndeclaredPlaceholderIsReportedOncePerLine) {
  std::string run;
  for (int i = 0; i < 10000; ++i) run += "{{x}} ";
  auto r = timed_translate("project: p\ntrain:\n  resources: {cpus: 1}\n  run: '" + run + "'\n");
  EXPECT_EQ(r.t.diagnostics.format(),
            "riseml.yml:4:8: error: train.run: {{x}} names no parameter: declare it under "
            "train.parameters, e.g. parameters: {x: [1, 2]}\n");
}

TEST(HostileInput, ValidUtf8AndByteOrderMarkAreFine) {
  const std::string text = "äöü ✓ 日本 \xF0\x9F\x9A\x80";
  auto r = timed_translate("\xEF\xBB\xBFproject: p\ntrain:\n  resources: {cpus: 1}\n"
                           "  run: echo " + text + "\n");
  ASSERT_TRUE(r.t.script.has_value()) << r.t.diagnostics.format();
  EXPECT_NE(r.t.script->find("bash -c 'echo " + text + "'"), std::string::npos) << *r.t.script;
}

TEST(HostileInput, MalformedUtf8IsRefusedWhereItIs) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"overlong '/'", "\xC0\xAF"},
      {"UTF-16 surrogate", "\xED\xA0\x80"},
      {"above U+10FFFF", "\xF4\x90\x80\x80"},
      {"truncated at the end", "\xE2\x9C"},
      {"lone continuation byte", "\x80"},
  };
  for (const auto& [what, bytes] : cases) {
    auto r = timed_translate("project: p\ntrain:\n  run: echo " + bytes);
    EXPECT_FALSE(r.t.script) << what;
    EXPECT_NE(r.t.diagnostics.format().find("riseml.yml:3:13: error: the byte 0x"),
              std::string::npos)
        << what << ": " << r.t.diagnostics.format();
  }
}

}  // namespace
}  // namespace riseml::test
