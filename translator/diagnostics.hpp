// Errors and warnings about a user's file, each with its place and a fix.
// Collected, not thrown: one pass reports every problem.
#pragma once

#include <string>
#include <vector>

namespace riseml {

// 1-based line and column; 0 means "the whole file".
struct Location {
  std::string file;
  int line = 0;
  int column = 0;
};

enum class Severity { warning, error };

struct Diagnostic {
  Severity severity;
  Location where;
  std::string key_path;  // e.g. "train.resources.gpus"; empty for the file as a whole
  std::string message;   // what is wrong, and how to fix it
};

class Diagnostics {
 public:
  void error(Location where, std::string key_path, std::string message);
  void warning(Location where, std::string key_path, std::string message);

  bool has_errors() const { return error_count_ > 0; }
  int error_count() const { return error_count_; }
  const std::vector<Diagnostic>& all() const { return items_; }

  // "FILE:LINE:COL: error: KEY: MESSAGE", one line per diagnostic, in file order, with
  // control characters escaped (printable_text.hpp).
  std::string format() const;

 private:
  std::vector<Diagnostic> items_;
  int error_count_ = 0;
};

std::string format_diagnostic(const Diagnostic& d);

}  // namespace riseml
