#include "pmix_value_reader.hpp"

#include <pmix.h>

#include <cstdlib>

namespace riseml::pmix {

void ValueRelease::operator()(pmix_value_t* value) const {
  PMIx_Value_destruct(value);
  std::free(value);
}

std::optional<long long> value_as_integer(const pmix_value_t& value) {
  switch (value.type) {
    case PMIX_INT:
      return value.data.integer;
    case PMIX_INT8:
      return value.data.int8;
    case PMIX_INT16:
      return value.data.int16;
    case PMIX_INT32:
      return value.data.int32;
    case PMIX_INT64:
      return value.data.int64;
    case PMIX_UINT:
      return value.data.uint;
    case PMIX_UINT8:
      return value.data.uint8;
    case PMIX_UINT16:
      return value.data.uint16;
    case PMIX_UINT32:
      return value.data.uint32;
    case PMIX_UINT64:
      return static_cast<long long>(value.data.uint64);
    case PMIX_SIZE:
      return static_cast<long long>(value.data.size);
    case PMIX_PROC_RANK:
      return value.data.rank;
    default:
      return std::nullopt;
  }
}

std::optional<std::string> value_as_string(const pmix_value_t& value) {
  if (value.type != PMIX_STRING || value.data.string == nullptr) return std::nullopt;
  return std::string(value.data.string);
}

std::optional<std::vector<std::byte>> value_as_bytes(const pmix_value_t& value) {
  if (value.type != PMIX_BYTE_OBJECT) return std::nullopt;
  const auto* begin = reinterpret_cast<const std::byte*>(value.data.bo.bytes);
  return std::vector<std::byte>(begin, begin + value.data.bo.size);
}

}  // namespace riseml::pmix
