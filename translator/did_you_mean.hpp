// Suggests the intended word for a misspelt key or name.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace riseml {

// Edit distance with transpositions (optimal string alignment).
int edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, if it is close enough to be a likely typo.
std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace riseml
