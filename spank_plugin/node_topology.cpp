#include "node_topology.hpp"

namespace riseml::placement {

std::size_t common_depth(const TreePath& a, const TreePath& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace riseml::placement
