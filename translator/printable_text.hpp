// Text from a user's file made safe to print on a terminal or in a script comment: control
// characters become visible escapes, so an ESC in a riseml.yml cannot drive the terminal that
// shows an error, and a line break cannot end a `#` comment in the generated script.
#pragma once

#include <string>

namespace riseml {

// `text` with NUL as \0, tab/line feed/carriage return as \t \n \r, other C0 characters and DEL
// as \xNN, C1 characters (U+0080-U+009F) as \uNNNN and bytes that are not UTF-8 as \xNN.
// Everything else, other scripts and emoji included, is kept as it is.
std::string printable(const std::string& text);

// The escape printable() writes for the character at text[at] (its length in `length`), or
// empty when that character is printed as it is.
std::string control_escape(const std::string& text, size_t at, size_t& length);

}  // namespace riseml
