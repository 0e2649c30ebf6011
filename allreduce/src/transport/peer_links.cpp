#include "peer_links.hpp"

namespace riseml {

std::string PeerLinks::name(int r) const {
  std::string s = "rank " + std::to_string(r);
  const auto at = static_cast<std::size_t>(r);
  if (r >= 0 && at < host_names_.size() && !host_names_[at].empty())
    s += " (host " + host_names_[at] + ")";
  return s;
}

}  // namespace riseml
