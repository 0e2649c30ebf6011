#include "yaml_document.hpp"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "utf8.hpp"

namespace riseml {

Location location_of(const YAML::Node& node, const std::string& file) {
  if (!node.IsDefined()) return {file, 0, 0};
  YAML::Mark m = node.Mark();
  if (m.is_null()) return {file, 0, 0};
  return {file, m.line + 1, m.column + 1};
}

namespace {

// yaml-cpp keeps both pairs of a duplicated key and silently returns the first on lookup;
// RiseML's parser rejected duplicates, so do we. Also bounds depth and node count, since
// aliases can make a small file into a huge graph.
class StructureChecker {
 public:
  StructureChecker(const std::string& file, Diagnostics& diags) : file_(file), diags_(diags) {}

  bool check(const YAML::Node& node, int depth) {
    if (++visited_ > kMaxYamlNodes) {
      diags_.error(location_of(node, file_), "",
                   "the document has more than " + std::to_string(kMaxYamlNodes) +
                       " nodes (through aliases?); a riseml.yml is a few dozen lines: "
                       "remove the repeated anchors");
      return false;
    }
    if (depth > kMaxYamlDepth) {
      diags_.error(location_of(node, file_), "",
                   "nesting deeper than " + std::to_string(kMaxYamlDepth) +
                       " levels; a riseml.yml nests at most 5 levels: check the indentation");
      return false;
    }
    if (node.IsMap()) {
      std::set<std::string> seen;
      for (const auto& kv : node) {
        if (kv.first.IsScalar()) {
          const std::string& key = kv.first.Scalar();
          if (!seen.insert(key).second) {
            diags_.error(location_of(kv.first, file_), "",
                         "duplicate key '" + key + "': each key may appear once in a mapping; "
                         "remove or merge the second one");
          }
        }
        if (!check(kv.first, depth + 1) || !check(kv.second, depth + 1)) return false;
      }
    } else if (node.IsSequence()) {
      for (const auto& item : node)
        if (!check(item, depth + 1)) return false;
    }
    return true;
  }

 private:
  const std::string& file_;
  Diagnostics& diags_;
  size_t visited_ = 0;
};

// yaml-cpp reports a tab in indentation as a generic error; say what it is.
std::optional<Location> first_indenting_tab(const std::string& text, const std::string& file) {
  int line = 1;
  bool at_line_start = true;
  int column = 1;
  for (char c : text) {
    if (c == '\n') {
      ++line;
      column = 1;
      at_line_start = true;
      continue;
    }
    if (at_line_start && c == '\t') return Location{file, line, column};
    if (c != ' ') at_line_start = false;
    ++column;
  }
  return std::nullopt;
}

// The 1-based line and column of byte `offset` of `text`.
Location location_at(const std::string& text, size_t offset, const std::string& file) {
  int line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {file, line, column};
}

// yaml-cpp says what it met, not what the writer forgot: turn its message into a fix.
// For "illegal map value" after a line that is a bare word ("train" for "train:"), the
// diagnostic moves to that word, where the colon is missing.
Diagnostic syntax_error(const YAML::ParserException& e, const std::string& text,
                        const std::string& file) {
  Location where{file, e.mark.line + 1, e.mark.column + 1};
  if (e.mark.is_null()) where = {file, 0, 0};
  std::string hint =
      "a key needs a colon after it, and nested keys must be indented further than their parent";
  if (e.msg.rfind(YAML::ErrorMsg::INVALID_UNICODE, 0) == 0) {
    hint = "a \\u or \\U escape in double quotes names no character (a UTF-16 surrogate, or "
           "above U+10FFFF): write the character itself";
  } else if (e.msg == YAML::ErrorMsg::END_OF_MAP_FLOW || e.msg == YAML::ErrorMsg::END_OF_SEQ_FLOW) {
    hint = "a '{' or '[' is not closed: add the matching '}' or ']', or put quotes around text "
           "that starts with '{' or '['";
  } else if (e.msg == YAML::ErrorMsg::MAP_VALUE && !e.mark.is_null()) {
    // The last line with content before the error.
    std::vector<std::string> lines;
    size_t start = 0;
    for (int i = 0; i < e.mark.line && start <= text.size(); ++i) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      lines.push_back(text.substr(start, end - start));
      start = end + 1;
    }
    auto word_char = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
    };
    for (int i = static_cast<int>(lines.size()) - 1; i >= 0; --i) {
      const std::string& line = lines[static_cast<size_t>(i)];
      const size_t begin = line.find_first_not_of(' ');
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      size_t end = begin;
      while (end < line.size() && word_char(line[end])) ++end;
      const bool bare_word = end > begin && end - begin <= 64 &&
                             line.find_first_not_of(" \r", end) == std::string::npos;
      if (bare_word) {
        const std::string word = line.substr(begin, end - begin);
        where = {file, i + 1, static_cast<int>(end) + 1};
        hint = "'" + word + "' has no colon after it: write '" + word + ":'";
      }
      break;
    }
  }
  return {Severity::error, where, "", "YAML syntax error: " + e.msg + " (" + hint + ")"};
}

}  // namespace

std::optional<YAML::Node> load_yaml(const std::string& text, const std::string& file,
                                    Diagnostics& diags) {
  if (text.size() > kMaxYamlBytes) {
    diags.error({file, 0, 0}, "",
                "the file is " + std::to_string(text.size()) + " bytes; the limit is " +
                    std::to_string(kMaxYamlBytes) + ": is this really a riseml.yml?");
    return std::nullopt;
  }
  if (size_t nul = text.find('\0'); nul != std::string::npos) {
    diags.error(location_at(text, nul, file), "",
                "a NUL byte: the file is not text (saved as UTF-16?); save it as UTF-8 text");
    return std::nullopt;
  }
  if (auto bad = first_non_utf8(text)) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[*bad]));
    diags.error(location_at(text, *bad, file), "",
                std::string("the byte ") + byte + " is not UTF-8 (the file is in another "
                "encoding, e.g. Latin-1): save it as UTF-8");
    return std::nullopt;
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    diags.error({file, e.mark.line + 1, e.mark.column + 1}, "",
                "nesting too deep to be a riseml.yml: check the brackets and indentation");
    return std::nullopt;
  } catch (const YAML::ParserException& e) {
    if (auto tab = first_indenting_tab(text, file)) {
      diags.error(*tab, "", "a tab indents this line; YAML allows only spaces: replace it");
    } else {
      Diagnostic d = syntax_error(e, text, file);
      diags.error(d.where, d.key_path, d.message);
    }
    return std::nullopt;
  } catch (const YAML::Exception& e) {
    diags.error({file, 0, 0}, "", std::string("YAML error: ") + e.what());
    return std::nullopt;
  }
  StructureChecker checker(file, diags);
  if (!checker.check(root, 0) || diags.has_errors()) return std::nullopt;
  return root;
}

std::optional<std::string> read_yaml_text(const std::string& path, Diagnostics& diags) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    diags.error({path, 0, 0}, "", "this is a directory; give the path of the riseml.yml inside it");
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    diags.error({path, 0, 0}, "",
                "cannot read the file: it does not exist or is not readable (give the path "
                "of your riseml.yml, or run in its folder)");
    return std::nullopt;
  }
  // Read one byte past the limit so load_yaml can tell the file is too large.
  std::string text(kMaxYamlBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) {
    diags.error({path, 0, 0}, "", "reading the file failed (is it a directory?)");
    return std::nullopt;
  }
  return text;
}

std::optional<YAML::Node> load_yaml_file(const std::string& path, Diagnostics& diags) {
  auto text = read_yaml_text(path, diags);
  if (!text) return std::nullopt;
  return load_yaml(*text, path, diags);
}

}  // namespace riseml
