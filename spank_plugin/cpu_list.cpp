#include "cpu_list.hpp"

#include <algorithm>
#include <charconv>

namespace riseml::placement {
namespace {

std::optional<unsigned> parse_number(std::string_view s) {
  unsigned value = 0;
  if (s.empty() || s.size() > 7) return std::nullopt;  // at most 9999999
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

}  // namespace

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) parts.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::optional<std::vector<unsigned>> parse_number_list(std::string_view text) {
  std::vector<unsigned> out;
  if (text.empty()) return std::nullopt;
  for (const std::string& part : split(text, ',')) {
    const std::size_t dash = part.find('-');
    if (dash == std::string::npos) {
      auto n = parse_number(part);
      if (!n) return std::nullopt;
      out.push_back(*n);
      continue;
    }
    auto lo = parse_number(std::string_view(part).substr(0, dash));
    auto hi = parse_number(std::string_view(part).substr(dash + 1));
    if (!lo || !hi || *lo > *hi || *hi - *lo > 65536) return std::nullopt;
    for (unsigned i = *lo; i <= *hi; ++i) out.push_back(i);
  }
  if (text.front() == ',' || text.back() == ',' || text.find(",,") != std::string_view::npos) {
    return std::nullopt;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string format_number_list(const std::vector<unsigned>& numbers) {
  std::string out;
  for (std::size_t i = 0; i < numbers.size();) {
    std::size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(numbers[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(numbers[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace riseml::placement
