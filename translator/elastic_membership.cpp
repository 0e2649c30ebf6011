#include "elastic_membership.hpp"

#include <set>
#include <vector>

namespace riseml {

namespace {

// "rml1, rml2" between `open` and `close` after `from`; empty when not there.
std::string between(std::string_view line, std::string_view open, char close) {
  const auto a = line.find(open);
  if (a == std::string_view::npos) return "";
  const auto b = line.find(close, a + open.size());
  if (b == std::string_view::npos) return "";
  return std::string(line.substr(a + open.size(), b - a - open.size()));
}

std::string leading_number(std::string_view text) {
  std::string n;
  for (char c : text) {
    if (c < '0' || c > '9') break;
    n.push_back(c);
  }
  return n;
}

}  // namespace

std::optional<std::string> elastic_membership(std::string_view log) {
  constexpr std::string_view tag = "riseml-elastic: ";
  std::optional<std::string> workers, nodes;
  std::set<std::string> left;
  std::size_t at = 0;
  while (at < log.size()) {
    auto nl = log.find('\n', at);
    if (nl == std::string_view::npos) nl = log.size();
    const std::string_view line = log.substr(at, nl - at);
    at = nl + 1;
    if (!line.starts_with(tag)) continue;
    // "<time> started 3 workers on 3 nodes (rml1, rml2, rml3), ..."
    if (const auto s = line.find(" started "); s != std::string_view::npos && s < 32) {
      workers = leading_number(line.substr(s + 9));
      nodes = between(line, " nodes (", ')');
      left.clear();
    } else if (const auto w = line.find(" the world re-formed: "); w != std::string_view::npos) {
      workers = leading_number(line.substr(w + 22));
      nodes = between(line, " node(s) (", ')');
    } else if (const auto n = line.find(" node "); n != std::string_view::npos && n < 32) {
      const std::string_view rest = line.substr(n + 6);
      if (const auto l = rest.find(" left: "); l != std::string_view::npos)
        left.insert(std::string(rest.substr(0, l)));
    }
  }
  if (!workers || workers->empty()) return std::nullopt;
  std::string text = "elastic: " + *workers + " workers";
  if (nodes && !nodes->empty()) text += " on " + *nodes;
  std::string gone;
  for (const auto& node : left) gone += (gone.empty() ? "" : ", ") + node;
  if (!gone.empty()) text += "; left: " + gone;
  return text;
}

}  // namespace riseml
