// Well-formed UTF-8, byte by byte: the loader refuses files that are not, yaml-cpp's escapes can
// still make such bytes inside a value, and messages must not cut a character in half.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace riseml {

// The length (1-4) of the well-formed UTF-8 sequence starting at text[at], or 0 when the bytes
// there are not one: a stray continuation byte, an overlong form, a UTF-16 surrogate, a code
// point above U+10FFFF, or a sequence cut short by the end of the text.
size_t utf8_sequence_length(const std::string& text, size_t at);

// The offset of the first byte that is not part of well-formed UTF-8, if any.
std::optional<size_t> first_non_utf8(const std::string& text);

// At most `max_bytes` of `text`, cut before a character rather than inside one.
std::string utf8_prefix(const std::string& text, size_t max_bytes);

// At most `max_bytes` of the end of `text`, cut after a character rather than inside one.
std::string utf8_suffix(const std::string& text, size_t max_bytes);

}  // namespace riseml
