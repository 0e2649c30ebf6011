// The response cache: names that completed, with every rank's metadata, under a small id. A
// rank that submits a name again with the metadata it had sends the id instead of the name and
// metadata (4 bytes instead of dozens: the steady state of a training loop fits the fixed
// slots of the first exchange). Every rank adds and updates entries in the same order (at
// finish, from the same table), so an id means the same name everywhere.
#pragma once

#include "meta_ref.hpp"
#include "wire.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace riseml::engine {

struct CachedResponse {
  std::string name;
  std::vector<MetaRef> metas;  // one per rank
};

class ResponseCache {
 public:
  static constexpr std::size_t kDefaultCapacity = 4096;

  explicit ResponseCache(std::size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  // The id of `name` if the cache holds it with the metadata of request `r` as rank `rank`'s
  // (compared with the request as it is: its metadata is not built).
  std::optional<std::uint32_t> id_of(const std::string& name, int rank, const Request& r) const;
  // The entry with that id, or null (an id no rank was given: a rank out of step).
  const CachedResponse* at(std::uint32_t id) const {
    return id < entries_.size() ? &entries_[id] : nullptr;
  }
  // A completed entry: updates the name's metadata, or adds it while there is room (ids are
  // never reused, so a full cache keeps what it has).
  void remember(const std::string& name, const std::vector<MetaRef>& metas);
  std::size_t size() const { return entries_.size(); }

 private:
  std::size_t capacity_;
  std::vector<CachedResponse> entries_;
  std::unordered_map<std::string, std::uint32_t> index_;
};

}  // namespace riseml::engine
