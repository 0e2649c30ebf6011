// The one check every string from a riseml.yml or a site file passes before it may reach the
// generated sbatch script (YamlReader::string and string_list apply it to every value they
// read). Quoting keeps shell words inert, but a line break would end a `#` comment or an
// `#SBATCH` line and start a command, a NUL truncates what bash reads, and an ESC or a C1
// character drives the terminal that shows the script. So: no control characters, except the
// line breaks and tabs of the commands a user writes under run and install.
#pragma once

#include <optional>
#include <string>

namespace riseml {

enum class ScriptText {
  // One line: names, images, paths, #SBATCH values, parameter values, environment values.
  one_line,
  // run and install commands: line breaks and tabs too (a `|` block is a multi-line script).
  commands,
  // The site's output_root, written inside double quotes so that $USER expands at run time:
  // one line, and only $NAME and ${NAME} may expand (no ", ', `, \, $(, or a stray }).
  run_time_path,
};

// What is wrong with `text` as that kind of value: the offending character, where it is, and
// how to fix it, ready to follow "KEY: " in a diagnostic. nullopt when the text is fine.
std::optional<std::string> script_text_problem(const std::string& text, ScriptText kind);

}  // namespace riseml
