#include "printable_text.hpp"

#include <cstdio>

#include "utf8.hpp"

namespace riseml {

std::string control_escape(const std::string& text, size_t at, size_t& length) {
  const size_t len = utf8_sequence_length(text, at);
  const auto c = static_cast<unsigned char>(text[at]);
  char buf[16];
  if (len == 0) {  // not UTF-8: show the byte
    length = 1;
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    return buf;
  }
  length = len;
  if (len == 1) {
    switch (c) {
      case '\0':
        return "\\0";
      case '\t':
        return "\\t";
      case '\n':
        return "\\n";
      case '\r':
        return "\\r";
      default:
        break;
    }
    if (c < 0x20 || c == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      return buf;
    }
    return "";
  }
  // U+0080-U+009F are C1 controls (CSI, NEL, ...), encoded as C2 80 .. C2 9F.
  if (len == 2 && c == 0xC2) {
    const auto second = static_cast<unsigned char>(text[at + 1]);
    if (second <= 0x9F) {
      std::snprintf(buf, sizeof buf, "\\u%04x", second);
      return buf;
    }
  }
  return "";
}

std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t length = 1;
    const std::string escape = control_escape(text, i, length);
    if (escape.empty()) {
      out.append(text, i, length);
    } else {
      out += escape;
    }
    i += length;
  }
  return out;
}

}  // namespace riseml
