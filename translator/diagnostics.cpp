#include "diagnostics.hpp"

#include <algorithm>
#include <tuple>

#include "printable_text.hpp"

namespace riseml {

void Diagnostics::error(Location where, std::string key_path, std::string message) {
  items_.push_back({Severity::error, std::move(where), std::move(key_path), std::move(message)});
  ++error_count_;
}

void Diagnostics::warning(Location where, std::string key_path, std::string message) {
  items_.push_back({Severity::warning, std::move(where), std::move(key_path), std::move(message)});
}

// Messages quote the user's file (values, keys, its name): escaped here, once, so a control
// character in the input shows as \x1b or \n instead of acting on the terminal.
std::string format_diagnostic(const Diagnostic& d) {
  std::string out = printable(d.where.file);
  if (d.where.line > 0) {
    out += ':' + std::to_string(d.where.line) + ':' + std::to_string(d.where.column);
  }
  out += d.severity == Severity::error ? ": error: " : ": warning: ";
  if (!d.key_path.empty()) out += printable(d.key_path) + ": ";
  out += printable(d.message);
  return out;
}

std::string Diagnostics::format() const {
  std::vector<const Diagnostic*> sorted;
  for (const auto& d : items_) sorted.push_back(&d);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Diagnostic* a, const Diagnostic* b) {
    return std::tie(a->where.line, a->where.column) < std::tie(b->where.line, b->where.column);
  });
  std::string out;
  for (const auto* d : sorted) out += format_diagnostic(*d) + '\n';
  return out;
}

}  // namespace riseml
