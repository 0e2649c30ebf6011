#include "utf8.hpp"

namespace riseml {

size_t utf8_sequence_length(const std::string& text, size_t at) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  if (at >= n) return 0;
  const unsigned char c = s[at];
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c < 0x80) return 1;
  // clang-format off
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c == 0xE0) { len = 3; lo = 0xA0; }
  else if (c >= 0xE1 && c <= 0xEC) len = 3;
  else if (c == 0xED) { len = 3; hi = 0x9F; }  // no UTF-16 surrogates
  else if (c >= 0xEE && c <= 0xEF) len = 3;
  else if (c == 0xF0) { len = 4; lo = 0x90; }
  else if (c >= 0xF1 && c <= 0xF3) len = 4;
  else if (c == 0xF4) { len = 4; hi = 0x8F; }  // nothing above U+10FFFF
  else return 0;
  // clang-format on
  if (at + len > n) return 0;
  for (size_t k = 1; k < len; ++k) {
    const unsigned char b = s[at + k];
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return 0;
  }
  return len;
}

std::optional<size_t> first_non_utf8(const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8_sequence_length(text, i);
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

namespace {
bool is_continuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}
}  // namespace

std::string utf8_prefix(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  // Step back over continuation bytes to the start of the character that would be cut.
  while (end > 0 && is_continuation(static_cast<unsigned char>(text[end]))) --end;
  return text.substr(0, end);
}

std::string utf8_suffix(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t begin = text.size() - max_bytes;
  while (begin < text.size() && is_continuation(static_cast<unsigned char>(text[begin]))) ++begin;
  return text.substr(begin);
}

}  // namespace riseml
