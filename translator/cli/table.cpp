#include "table.hpp"

#include <algorithm>

#include "../printable_text.hpp"

namespace riseml::cli {

std::string format_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> width;
  for (const auto& row : rows) {
    std::vector<std::string> line;
    for (size_t i = 0; i < row.size(); ++i) {
      line.push_back(printable(row[i]));
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], line.back().size());
    }
    cells.push_back(std::move(line));
  }
  std::string out;
  for (const auto& line : cells) {
    std::string text;
    for (size_t i = 0; i < line.size(); ++i) {
      text += line[i];
      if (i + 1 < line.size()) text += std::string(width[i] - line[i].size() + 2, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + '\n';
  }
  return out;
}

}  // namespace riseml::cli
