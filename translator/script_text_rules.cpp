#include "script_text_rules.hpp"

#include <cctype>

#include "printable_text.hpp"
#include "utf8.hpp"

namespace riseml {

namespace {

// The text just before offset `at`, so the message shows where in a long value the bad
// character is.
std::string place(const std::string& text, size_t at) {
  if (at == 0) return "at the start";
  const std::string before = text.substr(0, at);
  const std::string tail = utf8_suffix(before, 30);
  return "after '" + std::string(tail.size() < before.size() ? "..." : "") + tail + "'";
}

std::string name_of(const std::string& text, size_t at, const std::string& escape) {
  if (utf8_sequence_length(text, at) == 0) return "the byte " + escape + ", which is not UTF-8,";
  switch (text[at]) {
    case '\0':
      return "a NUL byte (\\0)";
    case '\n':
      return "a line break (\\n)";
    case '\r':
      return "a carriage return (\\r)";
    case '\t':
      return "a tab (\\t)";
    case '\x1b':
      return "an escape character (\\x1b)";
    default:
      return "the control character " + escape;
  }
}

std::optional<std::string> control_character_problem(const std::string& text, ScriptText kind) {
  for (size_t i = 0; i < text.size();) {
    size_t length = 1;
    const std::string escape = control_escape(text, i, length);
    const bool command_layout =
        kind == ScriptText::commands && (text[i] == '\n' || text[i] == '\t');
    if (escape.empty() || command_layout) {
      i += length;
      continue;
    }
    const std::string what = name_of(text, i, escape) + " " + place(text, i);
    if (utf8_sequence_length(text, i) == 0) {
      // yaml-cpp writes the escapes \N and \_ as single bytes, not as UTF-8.
      return what + ": write the character itself, in UTF-8 (not as \\N or \\_)";
    }
    const std::string source =
        " (in double quotes, YAML escapes such as \\n, \\e or \\0 write them)";
    if (kind == ScriptText::commands) {
      return what +
             ": a command may hold line breaks and tabs but no other control "
             "characters; remove it" +
             source;
    }
    return what +
           ": this value must be one line of text without control characters; remove "
           "it" +
           source;
  }
  return std::nullopt;
}

bool name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// The path is the default in "${RISEML_OUTPUT_ROOT:-PATH}/...": there bash expands $, ` and \,
// " ends the quotes, } ends the default, and a ' starts a quote that must be closed.
std::optional<std::string> double_quoted_problem(const std::string& text) {
  const std::string why =
      ": the path is written inside double quotes in the script, where only $NAME and ${NAME} "
      "expand; remove it";
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const char* name = c == '"'    ? "a double quote (\")"
                       : c == '\'' ? "a single quote (')"
                       : c == '`'  ? "a backquote (`)"
                       : c == '\\' ? "a backslash (\\)"
                       : c == '}'  ? "a closing brace (})"
                                   : nullptr;
    if (name) return std::string(name) + " " + place(text, i) + why;
    if (c != '$') continue;
    size_t j = i + 1;
    const bool braced = j < text.size() && text[j] == '{';
    if (braced) ++j;
    if (j >= text.size() || !name_start(text[j])) {
      return "'$' " + place(text, i) + " starts no variable name" + why;
    }
    while (j < text.size() && name_char(text[j])) ++j;
    if (braced) {
      if (j >= text.size() || text[j] != '}') {
        return "'${' " + place(text, i) + " is not ${NAME}" + why;
      }
      ++j;
    }
    i = j - 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> script_text_problem(const std::string& text, ScriptText kind) {
  if (auto problem = control_character_problem(text, kind)) return problem;
  if (kind == ScriptText::run_time_path) return double_quoted_problem(text);
  return std::nullopt;
}

}  // namespace riseml
