#include "yaml_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cctype>

#include "did_you_mean.hpp"
#include "utf8.hpp"
#include "yaml_document.hpp"

namespace riseml {

std::string join_key(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

bool is_plain(const YAML::Node& node) { return node.Tag() == "?"; }

// Hand-written, not std::regex: libstdc++'s regex recurses once per character, and a long
// scalar (30000 digits; fewer under ASan) overflowed the stack.
namespace {
size_t digits_from(const std::string& text, size_t i) {
  size_t n = 0;
  while (i + n < text.size() && std::isdigit(static_cast<unsigned char>(text[i + n]))) ++n;
  return n;
}
}  // namespace

// [-+]?[0-9]+
bool looks_like_integer(const std::string& text) {
  size_t i = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  size_t digits = digits_from(text, i);
  return digits > 0 && i + digits == text.size();
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool looks_like_number(const std::string& text) {
  size_t i = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  const size_t whole = digits_from(text, i);
  i += whole;
  size_t fraction = 0;
  if (i < text.size() && text[i] == '.') {
    fraction = digits_from(text, ++i);
    i += fraction;
  }
  if (whole == 0 && fraction == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    const size_t exponent = digits_from(text, i);
    if (exponent == 0) return false;
    i += exponent;
  }
  return i == text.size();
}

Location YamlReader::where(const YAML::Node& node) const { return location_of(node, file_); }

void YamlReader::error(const YAML::Node& at, const std::string& path, const std::string& message) {
  diags_.error(where(at), path, message);
}

void YamlReader::warning(const YAML::Node& at, const std::string& path,
                         const std::string& message) {
  diags_.warning(where(at), path, message);
}

std::string YamlReader::describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  std::string s = node.Scalar();
  if (s.size() > 40) s = utf8_prefix(s, 37) + "...";
  return "'" + s + "'";
}

bool YamlReader::expect_map(const YAML::Node& node, const std::string& path,
                            const std::string& example) {
  if (node.IsMap()) return true;
  error(node, path, "must be a mapping of keys, got " + describe(node) + "; write e.g. " + example);
  return false;
}

void YamlReader::check_keys(const YAML::Node& map, const std::string& path,
                            const std::vector<std::string>& known) {
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) {
      error(kv.first, path, "a key must be a plain word, got " + describe(kv.first));
      continue;
    }
    const std::string& key = kv.first.Scalar();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    error(kv.first, join_key(path, key),
          "unknown key" + did_you_mean(key, known) + "; " +
              (path.empty() ? "top-level" : "'" + path + "'") + " keys are: " + list);
  }
}

bool YamlReader::allowed_in_script(const YAML::Node& at, const std::string& path,
                                   const std::string& text, ScriptText kind) {
  auto problem = script_text_problem(text, kind);
  if (problem) error(at, path, *problem);
  return !problem;
}

std::optional<std::string> YamlReader::string(const YAML::Node& node, const std::string& path,
                                              ScriptText kind) {
  if (!node.IsScalar()) {
    error(node, path, "must be a text value, got " + describe(node));
    return std::nullopt;
  }
  if (!allowed_in_script(node, path, node.Scalar(), kind)) return std::nullopt;
  return node.Scalar();
}

std::optional<long long> YamlReader::integer(const YAML::Node& node, const std::string& path,
                                             long long minimum, const std::string& example) {
  if (!node.IsScalar() || !is_plain(node) || !looks_like_integer(node.Scalar())) {
    std::string got = describe(node);
    std::string extra;
    if (node.IsScalar() && !is_plain(node) && looks_like_integer(node.Scalar()))
      extra = " (a quoted number is text: remove the quotes)";
    else if (node.IsScalar() && looks_like_number(node.Scalar()))
      extra = " (a whole number is needed)";
    error(node, path, "must be a whole number, got " + got + extra + "; write e.g. " + example);
    return std::nullopt;
  }
  long long value = 0;
  const std::string& s = node.Scalar();
  const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
  auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    error(node, path, "the number " + describe(node) + " is too large; write e.g. " + example);
    return std::nullopt;
  }
  if (value < minimum) {
    error(node, path,
          "must be at least " + std::to_string(minimum) + ", got " + s + "; write e.g. " + example);
    return std::nullopt;
  }
  return value;
}

std::optional<double> YamlReader::number(const YAML::Node& node, const std::string& path,
                                         double minimum, bool minimum_exclusive,
                                         const std::string& example) {
  if (!node.IsScalar() || !is_plain(node) || !looks_like_number(node.Scalar())) {
    std::string extra;
    if (node.IsScalar() && !is_plain(node) && looks_like_number(node.Scalar()))
      extra = " (a quoted number is text: remove the quotes)";
    error(node, path,
          "must be a number, got " + describe(node) + extra + "; write e.g. " + example);
    return std::nullopt;
  }
  double value = std::strtod(node.Scalar().c_str(), nullptr);
  if (!std::isfinite(value)) {
    error(node, path, "the number " + describe(node) + " is out of range; write e.g. " + example);
    return std::nullopt;
  }
  if (value < minimum || (minimum_exclusive && value == minimum)) {
    std::string bound = minimum_exclusive ? "greater than " : "at least ";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", minimum);
    error(node, path,
          "must be " + bound + buf + ", got " + node.Scalar() + "; write e.g. " + example);
    return std::nullopt;
  }
  return value;
}

std::optional<bool> YamlReader::boolean(const YAML::Node& node, const std::string& path) {
  if (node.IsScalar()) {
    std::string s = node.Scalar();
    std::string lower = s;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    bool plain = is_plain(node);
    if (plain && (lower == "true" || lower == "false")) return lower == "true";
    const bool yaml11_true = lower == "yes" || lower == "on" || lower == "y";
    const bool yaml11_false = lower == "no" || lower == "off" || lower == "n";
    if (plain && (yaml11_true || yaml11_false)) {
      warning(node, path,
              "'" + s + "' is a boolean only in YAML 1.1; read as " +
                  (yaml11_true ? "true" : "false") + ": write " +
                  (yaml11_true ? "true" : "false"));
      return yaml11_true;
    }
    if (!plain && (lower == "true" || lower == "false")) {
      warning(node, path, "'" + s + "' is quoted text; read as the boolean " + lower +
                              ": write " + lower + " without quotes");
      return lower == "true";
    }
  }
  error(node, path, "must be true or false, got " + describe(node));
  return std::nullopt;
}

bool YamlReader::is_folded_block(const YAML::Node& node) const {
  if (!source_ || !node.IsScalar()) return false;
  const YAML::Mark m = node.Mark();
  return !m.is_null() && m.pos >= 0 && static_cast<size_t>(m.pos) < source_->size() &&
         (*source_)[static_cast<size_t>(m.pos)] == '>';
}

SourceText YamlReader::command(const YAML::Node& node, const std::string& path) {
  SourceText out{node.Scalar(), where(node)};
  if (is_folded_block(node) && out.text.find('\n') != std::string::npos) {
    // YAML keeps the line break before a more-indented line of a folded block, and bash would
    // run each line as its own command; the writer of '>' meant one command line.
    std::string joined;
    bool after_break = false;
    for (char c : out.text) {
      if (c == '\n') {
        while (!joined.empty() && joined.back() == ' ') joined.pop_back();
        joined += ' ';
        after_break = true;
      } else if (!(after_break && c == ' ')) {
        joined += c;
        after_break = false;
      }
    }
    while (!joined.empty() && joined.back() == ' ') joined.pop_back();
    warning(node, path,
            "this folded block (>) keeps line breaks before its more-indented lines, which "
            "would split the command; they are read as spaces: indent its lines equally, or use "
            "| for a multi-line script");
    out.text = joined;
  }
  return out;
}

std::optional<std::vector<SourceText>> YamlReader::string_list(const YAML::Node& node,
                                                               const std::string& path,
                                                               ScriptText kind) {
  std::vector<SourceText> out;
  if (node.IsScalar()) {
    out.push_back(command(node, path));
    if (!allowed_in_script(node, path, out.back().text, kind)) return std::nullopt;
    return out;
  }
  if (node.IsSequence()) {
    bool ok = true;
    int index = 0;
    for (const auto& item : node) {
      std::string item_path = path + "[" + std::to_string(index++) + "]";
      if (!item.IsScalar()) {
        error(item, item_path,
              "each entry must be one command as text, got " + describe(item) +
                  " (a 'key: value' inside a command needs quotes around the whole command)");
        ok = false;
        continue;
      }
      out.push_back(command(item, item_path));
      if (!allowed_in_script(item, item_path, out.back().text, kind)) ok = false;
    }
    if (!ok) return std::nullopt;
    return out;
  }
  error(node, path,
        "must be a command or a list of commands, got " + describe(node) +
            "; write e.g. '- python train.py'");
  return std::nullopt;
}

}  // namespace riseml
