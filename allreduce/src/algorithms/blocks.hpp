// The blocks of a collective that gives each rank its own part of a buffer: counts[b] elements
// for group member b, laid out back to back in member order, or the same count for every member
// (the even collectives pass no array, so they allocate nothing).
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>

namespace riseml {

struct Blocks {
  std::span<const std::size_t> counts;  // empty: every block holds `uniform` elements
  std::size_t uniform = 0;

  std::size_t count(int b) const {
    return counts.empty() ? uniform : counts[static_cast<std::size_t>(b)];
  }
  // Elements before block b (a running sum: the groups are small and this runs once per step).
  std::size_t start(int b) const {
    if (counts.empty()) return uniform * static_cast<std::size_t>(b);
    std::size_t s = 0;
    for (int k = 0; k < b; ++k) s += counts[static_cast<std::size_t>(k)];
    return s;
  }
  std::size_t largest(int blocks) const {
    if (counts.empty()) return uniform;
    std::size_t l = 0;
    for (int k = 0; k < blocks; ++k) l = std::max(l, counts[static_cast<std::size_t>(k)]);
    return l;
  }
};

}  // namespace riseml
