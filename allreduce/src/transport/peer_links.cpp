#include "peer_links.hpp"

namespace riseml {

std::string PeerLinks::name(int r) const {
  std::string s = "rank " + std::to_string(r);
  if (r >= 0 && r < static_cast<int>(host_names_.size()) && !host_names_[static_cast<std::size_t>(r)].empty())
    s += " (host " + host_names_[static_cast<std::size_t>(r)] + ")";
  return s;
}

}  // namespace riseml
