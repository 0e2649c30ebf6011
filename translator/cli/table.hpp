// A plain text table for the terminal: left-aligned columns, two spaces apart.
#pragma once

#include <string>
#include <vector>

namespace riseml::cli {

// Every cell goes through printable(); the last column is not padded.
std::string format_table(const std::vector<std::vector<std::string>>& rows);

}  // namespace riseml::cli
