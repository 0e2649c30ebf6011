#pragma once

namespace riseml {
inline constexpr const char* kRisemlVersion = "0.1.0";
}
