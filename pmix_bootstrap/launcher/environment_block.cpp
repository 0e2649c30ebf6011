#include "environment_block.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

extern char** environ;

namespace riseml::launch {

EnvironmentBlock::EnvironmentBlock(const std::vector<std::string>& entries)
    : entries_(static_cast<char**>(std::calloc(entries.size() + 1, sizeof(char*)))) {
  if (entries_ == nullptr) throw std::bad_alloc();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    entries_[i] = strdup(entries[i].c_str());
    if (entries_[i] == nullptr) {
      this->~EnvironmentBlock();
      throw std::bad_alloc();
    }
  }
}

EnvironmentBlock::EnvironmentBlock(EnvironmentBlock&& other) noexcept
    : entries_(std::exchange(other.entries_, nullptr)) {}

EnvironmentBlock::~EnvironmentBlock() {
  if (entries_ == nullptr) return;
  for (char** entry = entries_; *entry != nullptr; ++entry) std::free(*entry);
  std::free(entries_);
  entries_ = nullptr;
}

EnvironmentBlock EnvironmentBlock::inherited_without_pmix_client_variables(
    const std::vector<std::string>& overrides) {
  auto overridden = [&](const std::string& entry) {
    const std::size_t equals = entry.find('=');
    if (equals == std::string::npos) return false;
    const std::string name = entry.substr(0, equals + 1);  // "NAME="
    return std::any_of(overrides.begin(), overrides.end(),
                       [&](const std::string& override) { return override.starts_with(name); });
  };
  std::vector<std::string> kept;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string text(*entry);
    if (!is_pmix_client_variable(text) && !overridden(text)) kept.push_back(std::move(text));
  }
  kept.insert(kept.end(), overrides.begin(), overrides.end());
  return EnvironmentBlock(kept);
}

std::vector<std::string> EnvironmentBlock::to_strings() const {
  std::vector<std::string> result;
  for (char** entry = entries_; entry != nullptr && *entry != nullptr; ++entry) {
    result.emplace_back(*entry);
  }
  return result;
}

bool is_pmix_client_variable(const std::string& entry) {
  return entry.starts_with("PMIX_") && !entry.starts_with("PMIX_MCA_");
}

}  // namespace riseml::launch
