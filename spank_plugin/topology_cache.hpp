// The helper's answer for a topology= file, kept so that later steps on the node read a small
// text file instead of starting riseml-topology. Per user (steps read it with the user's
// privileges, so one user's entries must never be trusted by another): BASE/riseml-topology-UID,
// mode 0700, used only while this user owns it. One entry per node and topology path; the entry
// holds the full key (file and helper identity) and is written to a temporary name and renamed,
// so a reader sees a whole entry or none. Any problem with the cache only means a miss.
#pragma once

#include <optional>
#include <string>

namespace riseml::placement {

class TopologyCache {
 public:
  // base: an absolute folder such as /tmp (topology_cache= in plugstack.conf).
  explicit TopologyCache(std::string base) : base_(std::move(base)) {}

  // The text stored under exactly this key, or nullopt (`note` says why when it is worth a
  // debug line). `slot` picks the entry (node + topology path); `key` is all that must match.
  std::optional<std::string> find(const std::string& slot, const std::string& key, std::string& note) const noexcept;
  bool store(const std::string& slot, const std::string& key, const std::string& text, std::string& note) const noexcept;

  std::string folder() const;  // BASE/riseml-topology-UID

 private:
  std::string base_;
};

// What identifies a file's content without reading it: device, inode, size, mtime and ctime
// (ctime changes with every write and cannot be set back). Empty on error (errno set).
std::string file_identity(int fd);
std::string file_identity(const std::string& path);

}  // namespace riseml::placement
