#include "job_facts_fallbacks.hpp"

#include <algorithm>
#include <charconv>

namespace riseml::pmix {

std::vector<std::string> split_comma_list(std::string_view list) {
  std::vector<std::string> items;
  while (!list.empty()) {
    std::size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    if (!item.empty()) items.emplace_back(item);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return items;
}

std::optional<int> local_rank_from_peers(std::string_view peers, int rank) {
  std::vector<std::string> items = split_comma_list(peers);
  for (std::size_t i = 0; i < items.size(); ++i) {
    int peer = -1;
    const std::string& item = items[i];
    auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), peer);
    if (error != std::errc() || end != item.data() + item.size()) return std::nullopt;
    if (peer == rank) return static_cast<int>(i);
  }
  return std::nullopt;
}

std::optional<int> node_id_from_node_list(std::string_view nodes, std::string_view hostname) {
  std::vector<std::string> items = split_comma_list(nodes);
  auto found = std::find(items.begin(), items.end(), hostname);
  if (found == items.end()) return std::nullopt;
  return static_cast<int>(found - items.begin());
}

}  // namespace riseml::pmix
