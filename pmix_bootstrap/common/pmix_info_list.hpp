// Owning builders for the pmix_info_t arrays that PMIx calls take, so no array leaks on an
// early return or an exception.
#pragma once

#include <pmix_common.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace riseml::pmix {

// A finished, immutable array of pmix_info_t (a pmix_data_array_t of PMIX_INFO underneath).
class InfoArray {
 public:
  InfoArray();
  explicit InfoArray(pmix_data_array_t array);  // takes ownership
  InfoArray(InfoArray&& other) noexcept;
  InfoArray& operator=(InfoArray&& other) noexcept;
  InfoArray(const InfoArray&) = delete;
  InfoArray& operator=(const InfoArray&) = delete;
  ~InfoArray();

  pmix_info_t* data() const;
  std::size_t size() const { return array_.size; }
  // The underlying data array, for nesting (PMIX_PROC_INFO_ARRAY values).
  const pmix_data_array_t* as_data_array() const { return &array_; }

 private:
  pmix_data_array_t array_;
};

// Collects key/value pairs (every value is copied in) and turns them into an InfoArray.
class InfoList {
 public:
  InfoList();
  InfoList(const InfoList&) = delete;
  InfoList& operator=(const InfoList&) = delete;
  ~InfoList();

  InfoList& add_bool(const char* key, bool value);
  InfoList& add_int(const char* key, int value);
  InfoList& add_uint16(const char* key, std::uint16_t value);
  InfoList& add_uint32(const char* key, std::uint32_t value);
  InfoList& add_rank(const char* key, pmix_rank_t value);
  InfoList& add_range(const char* key, pmix_data_range_t value);
  InfoList& add_string(const char* key, const std::string& value);
  // A PMIx regex as made by PMIx_generate_regex / PMIx_generate_ppn (not necessarily a C string).
  InfoList& add_regex(const char* key, const char* regex);
  InfoList& add_bytes(const char* key, std::span<const std::byte> value);
  InfoList& add_info_array(const char* key, const InfoArray& value);

  InfoArray finish();

 private:
  InfoList& add(const char* key, const void* value, pmix_data_type_t type);

  void* list_;
};

}  // namespace riseml::pmix
