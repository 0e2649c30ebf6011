// One rank's metadata as the tensor table and the response cache hold it: shared and never
// changed, so that a request sent as its cache id goes into the table, and a finished entry into
// the cache, without a copy of its shapes (every tensor of every training step, on every rank).
// Null where a rank sent nothing; compares by value (the same object compares at once).
#pragma once

#include "wire.hpp"

#include <memory>
#include <optional>
#include <utility>

namespace riseml::engine {

class MetaRef {
 public:
  MetaRef() = default;
  MetaRef(std::nullopt_t) {}  // NOLINT: as std::optional, none
  MetaRef(TensorMeta meta)    // NOLINT: as std::optional, a value
      : meta_(std::make_shared<const TensorMeta>(std::move(meta))) {}

  explicit operator bool() const { return meta_ != nullptr; }
  const TensorMeta& operator*() const { return *meta_; }
  const TensorMeta* operator->() const { return meta_.get(); }

  friend bool operator==(const MetaRef& a, const MetaRef& b) {
    return a.meta_ == b.meta_ || (a.meta_ && b.meta_ && *a.meta_ == *b.meta_);
  }

 private:
  std::shared_ptr<const TensorMeta> meta_;
};

}  // namespace riseml::engine
