// Typed reads from yaml-cpp nodes that report, rather than throw, when a value is wrong.
// Every message names the key path and says what a right value looks like.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "diagnostics.hpp"
#include "script_text_rules.hpp"

namespace riseml {

// A string from the file with the place it came from (a run or install line, say).
struct SourceText {
  std::string text;
  Location where;
};

std::string join_key(const std::string& path, const std::string& key);

class YamlReader {
 public:
  YamlReader(std::string file, Diagnostics& diags, const std::string* source = nullptr)
      : file_(std::move(file)), diags_(diags), source_(source) {}

  const std::string& file() const { return file_; }
  Diagnostics& diags() { return diags_; }
  Location where(const YAML::Node& node) const;

  void error(const YAML::Node& at, const std::string& path, const std::string& message);
  void warning(const YAML::Node& at, const std::string& path, const std::string& message);

  // True when `node` is a mapping; otherwise reports "must be a mapping" with `example`.
  bool expect_map(const YAML::Node& node, const std::string& path, const std::string& example);

  // Reports each key of `map` not in `known`, with a did-you-mean.
  void check_keys(const YAML::Node& map, const std::string& path,
                  const std::vector<std::string>& known);

  // Every text value passes script_text_problem for `kind` here, so nothing read through the
  // reader can put a control character into the script.
  std::optional<std::string> string(const YAML::Node& node, const std::string& path,
                                    ScriptText kind = ScriptText::one_line);
  std::optional<long long> integer(const YAML::Node& node, const std::string& path,
                                   long long minimum, const std::string& example);
  std::optional<double> number(const YAML::Node& node, const std::string& path, double minimum,
                               bool minimum_exclusive, const std::string& example);
  // true/false; YAML 1.1's yes/no/on/off are read as booleans with a warning.
  std::optional<bool> boolean(const YAML::Node& node, const std::string& path);
  // A string or a list of strings (one command per entry). A folded block (>, >-) is one
  // command: the line breaks YAML keeps before more-indented lines become spaces (warning).
  // Each entry passes script_text_problem for `kind`.
  std::optional<std::vector<SourceText>> string_list(const YAML::Node& node,
                                                     const std::string& path,
                                                     ScriptText kind = ScriptText::one_line);

  // A short rendering of a node for messages: 'text' (cut at a character), a list, a mapping.
  static std::string describe(const YAML::Node& node);

 private:
  bool is_folded_block(const YAML::Node& node) const;
  SourceText command(const YAML::Node& node, const std::string& path);
  // Reports the problem script_text_problem finds, at `at`; true when there is none.
  bool allowed_in_script(const YAML::Node& at, const std::string& path, const std::string& text,
                         ScriptText kind);

  std::string file_;
  Diagnostics& diags_;
  const std::string* source_;  // the document's text, when known
};

// Scalar classification by YAML 1.2's core schema (plus '.5' and '1e-6', which people write).
bool is_plain(const YAML::Node& node);
bool looks_like_integer(const std::string& text);
bool looks_like_number(const std::string& text);

}  // namespace riseml
