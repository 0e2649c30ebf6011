// The arguments of an #SBATCH line as sbatch reads them, and the quoting that keeps a value one
// argument (sbatch 22.05 on the testbed, tests/e2e/sbatch_quoted_values.sh).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace riseml {

// sbatch's directive parser: arguments split at blanks; '"' and '\'' group; a backslash takes
// the next character as it is; '#' outside quotes ends the line.
std::vector<std::string> sbatch_directive_arguments(std::string_view line);

// `value` as one argument of that parser: as it is when it has no blank, quote, backslash or
// '#'; else in double quotes with '"' and '\' after a backslash.
std::string sbatch_argument(const std::string& value);

}  // namespace riseml
