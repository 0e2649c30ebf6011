#include "sbatch_directive.hpp"

namespace riseml {

std::vector<std::string> sbatch_directive_arguments(std::string_view line) {
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  std::vector<std::string> args;
  std::size_t i = 0;
  for (;;) {
    while (i < line.size() && blank(line[i])) ++i;
    if (i == line.size() || line[i] == '#') return args;
    std::string arg;
    char quote = 0;
    for (; i < line.size() && (quote || !blank(line[i])); ++i) {
      const char c = line[i];
      if (c == '\\' && i + 1 < line.size()) {
        arg += line[++i];
      } else if (quote && c == quote) {
        quote = 0;
      } else if (!quote && (c == '"' || c == '\'')) {
        quote = c;
      } else if (!quote && c == '#') {
        args.push_back(arg);
        return args;
      } else {
        arg += c;
      }
    }
    args.push_back(arg);
  }
}

std::string sbatch_argument(const std::string& value) {
  if (value.find_first_of(" \t\"'\\#") == std::string::npos) return value;
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + '"';
}

}  // namespace riseml
