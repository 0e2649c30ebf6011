#include "did_you_mean.hpp"

#include <algorithm>
#include <cctype>

namespace riseml {

namespace {
char fold(char c) {
  // '-' and '_' are interchangeable in keys people type.
  if (c == '_') return '-';
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}
}  // namespace

int edit_distance(std::string_view a, std::string_view b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      int cost = fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) && fold(a[i - 2]) == fold(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates) {
  if (word.size() > 64) return std::nullopt;  // not a typo, and keeps the table small
  std::optional<std::string> best;
  int best_distance = 0;
  for (const auto& c : candidates) {
    int dist = edit_distance(word, c);
    if (!best || dist < best_distance) {
      best = c;
      best_distance = dist;
    }
  }
  const int allowed = std::max<int>(1, static_cast<int>(word.size()) / 3);
  if (best && best_distance <= allowed) return best;
  return std::nullopt;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  auto m = closest_match(word, candidates);
  return m ? " (did you mean '" + *m + "'?)" : "";
}

}  // namespace riseml
