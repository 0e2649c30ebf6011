// Hyperparameter sweeps: ranges, the cartesian product, and {{placeholder}} substitution.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "job_model.hpp"

namespace riseml {

// min, min+step, ... up to max inclusive; values keep the precision the user wrote.
// nullopt when there would be more than max_count values.
std::optional<std::vector<std::string>> expand_range(const std::string& min_text,
                                                     const std::string& max_text,
                                                     const std::string& step_text,
                                                     size_t max_count);

struct Placeholder {
  std::string name;
  size_t offset = 0;  // of the opening '{{'
  size_t length = 0;  // through the closing '}}'
};

// Every {{ name }} in text (spaces inside the braces allowed).
std::vector<Placeholder> find_placeholders(const std::string& text);

// The number of combinations, saturating at SIZE_MAX.
size_t combination_count(const std::vector<Parameter>& parameters);

// The values of combination `index` (first parameter varies slowest, as itertools.product).
std::vector<std::string> combination(const std::vector<Parameter>& parameters, size_t index);

// Replaces each {{name}} whose name is a parameter with that parameter's value.
std::string substitute(const std::string& text, const std::vector<Parameter>& parameters,
                       const std::vector<std::string>& values);

// The environment variable a parameter is exported as: 'lr-decay' -> 'LR_DECAY'.
std::string parameter_env_name(const std::string& name);

}  // namespace riseml
