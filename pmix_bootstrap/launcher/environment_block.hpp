// A child's environment as a NULL-terminated array of malloc'ed "NAME=value" strings: the form
// execve takes and PMIx_server_setup_fork extends in place (it reallocs the array, so the
// array must come from malloc, not new or std::vector).
#pragma once

#include <string>
#include <vector>

namespace riseml::launch {

class EnvironmentBlock {
 public:
  explicit EnvironmentBlock(const std::vector<std::string>& entries);
  EnvironmentBlock(EnvironmentBlock&& other) noexcept;
  EnvironmentBlock& operator=(EnvironmentBlock&&) = delete;
  EnvironmentBlock(const EnvironmentBlock&) = delete;
  EnvironmentBlock& operator=(const EnvironmentBlock&) = delete;
  ~EnvironmentBlock();

  // This process's environment without the PMIx client variables it may have inherited from
  // an outer launcher (PMIX_MCA_* tuning stays): the children's server is ours. `overrides`
  // ("NAME=value") replace inherited variables of the same name and are added at the end.
  static EnvironmentBlock inherited_without_pmix_client_variables(
      const std::vector<std::string>& overrides = {});

  char** entries() const { return entries_; }
  char*** address() { return &entries_; }
  std::vector<std::string> to_strings() const;

 private:
  char** entries_;
};

// True for PMIX_* variables other than PMIX_MCA_*.
bool is_pmix_client_variable(const std::string& entry);

}  // namespace riseml::launch
