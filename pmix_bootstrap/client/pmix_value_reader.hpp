// Typed reads of the pmix_value_t that PMIx_Get returns; servers differ in the integer width
// they use for the same key, so integers of any width are accepted.
#pragma once

#include <pmix_common.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace riseml::pmix {

struct ValueRelease {
  void operator()(pmix_value_t* value) const;
};
using OwnedValue = std::unique_ptr<pmix_value_t, ValueRelease>;

std::optional<long long> value_as_integer(const pmix_value_t& value);
std::optional<std::string> value_as_string(const pmix_value_t& value);
std::optional<std::vector<std::byte>> value_as_bytes(const pmix_value_t& value);

}  // namespace riseml::pmix
