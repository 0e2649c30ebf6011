#include "pmix_info_list.hpp"

#include <pmix.h>

#include <stdexcept>
#include <utility>

#include "pmix_status_text.hpp"

namespace riseml::pmix {

namespace {

pmix_data_array_t empty_array() {
  pmix_data_array_t array{};
  array.type = PMIX_INFO;
  array.size = 0;
  array.array = nullptr;
  return array;
}

}  // namespace

InfoArray::InfoArray() : array_(empty_array()) {}

InfoArray::InfoArray(pmix_data_array_t array) : array_(array) {}

InfoArray::InfoArray(InfoArray&& other) noexcept
    : array_(std::exchange(other.array_, empty_array())) {}

InfoArray& InfoArray::operator=(InfoArray&& other) noexcept {
  if (this != &other) {
    PMIx_Data_array_destruct(&array_);
    array_ = std::exchange(other.array_, empty_array());
  }
  return *this;
}

InfoArray::~InfoArray() {
  PMIx_Data_array_destruct(&array_);
}

pmix_info_t* InfoArray::data() const {
  return static_cast<pmix_info_t*>(array_.array);
}

InfoList::InfoList() : list_(PMIx_Info_list_start()) {
  if (list_ == nullptr) throw std::bad_alloc();
}

InfoList::~InfoList() {
  PMIx_Info_list_release(list_);
}

InfoList& InfoList::add(const char* key, const void* value, pmix_data_type_t type) {
  pmix_status_t status = PMIx_Info_list_add(list_, key, value, type);
  if (status != PMIX_SUCCESS) {
    throw std::runtime_error(std::string("cannot build PMIx info '") + key +
                             "': " + describe_status(status));
  }
  return *this;
}

InfoList& InfoList::add_bool(const char* key, bool value) {
  return add(key, &value, PMIX_BOOL);
}

InfoList& InfoList::add_int(const char* key, int value) {
  return add(key, &value, PMIX_INT);
}

InfoList& InfoList::add_uint16(const char* key, std::uint16_t value) {
  return add(key, &value, PMIX_UINT16);
}

InfoList& InfoList::add_uint32(const char* key, std::uint32_t value) {
  return add(key, &value, PMIX_UINT32);
}

InfoList& InfoList::add_rank(const char* key, pmix_rank_t value) {
  return add(key, &value, PMIX_PROC_RANK);
}

InfoList& InfoList::add_range(const char* key, pmix_data_range_t value) {
  return add(key, &value, PMIX_DATA_RANGE);
}

InfoList& InfoList::add_string(const char* key, const std::string& value) {
  return add(key, value.c_str(), PMIX_STRING);
}

InfoList& InfoList::add_regex(const char* key, const char* regex) {
  return add(key, regex, PMIX_REGEX);
}

InfoList& InfoList::add_bytes(const char* key, std::span<const std::byte> value) {
  pmix_byte_object_t bytes{};
  // PMIx copies the bytes; it never writes through this pointer.
  bytes.bytes = reinterpret_cast<char*>(const_cast<std::byte*>(value.data()));
  bytes.size = value.size();
  return add(key, &bytes, PMIX_BYTE_OBJECT);
}

InfoList& InfoList::add_info_array(const char* key, const InfoArray& value) {
  return add(key, value.as_data_array(), PMIX_DATA_ARRAY);
}

InfoArray InfoList::finish() {
  pmix_data_array_t array = empty_array();
  pmix_status_t status = PMIx_Info_list_convert(list_, &array);
  if (status == PMIX_ERR_EMPTY) return InfoArray();
  if (status != PMIX_SUCCESS) {
    throw std::runtime_error("cannot build a PMIx info array: " + describe_status(status));
  }
  return InfoArray(array);
}

}  // namespace riseml::pmix
