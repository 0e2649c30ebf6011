// Lists of small numbers as Linux writes them: "0-3,8,10-11".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace riseml::placement {

// Sorted, without duplicates; nullopt for anything else than numbers, ranges and commas.
std::optional<std::vector<unsigned>> parse_number_list(std::string_view text);
std::string format_number_list(const std::vector<unsigned>& numbers);  // sorted input -> "0-3,8"

std::vector<std::string> split(std::string_view text, char sep);  // empty parts dropped

}  // namespace riseml::placement
