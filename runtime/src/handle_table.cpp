#include <riseml/runtime/handle_table.hpp>

#include <string>
#include <utility>

namespace riseml::runtime {

namespace {

CollectiveError unknown_handle(HandleId id) {
  return CollectiveError(ErrorKind::invalid_argument,
                         "riseml: unknown or already synchronized handle " + std::to_string(id));
}

}  // namespace

void HandleTable::take_name(int process_set, const std::string& name) {
  if (name.empty()) return;
  std::lock_guard lock(mutex_);
  if (!names_[process_set].insert(name).second)
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml: a collective named '" + name +
                              "' is already in flight on this rank (submitted and not yet "
                              "synchronized); synchronize it first or use another name");
}

void HandleTable::release_name(int process_set, const std::string& name) {
  if (name.empty()) return;
  std::lock_guard lock(mutex_);
  names_[process_set].erase(name);
}

HandleId HandleTable::add(engine::Handle handle, Attachment attachment, bool keeps_device_result,
                          int process_set, std::string name) {
  std::lock_guard lock(mutex_);
  const HandleId id = next_id_++;
  pending_.emplace(id, Entry{std::move(handle), std::move(attachment), keeps_device_result,
                             process_set, std::move(name)});
  return id;
}

bool HandleTable::poll(HandleId id) const {
  engine::Handle handle;
  {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(id);
    if (it == pending_.end()) throw unknown_handle(id);
    handle = it->second.handle;
  }
  return handle.poll();
}

CompletedOperation HandleTable::wait(HandleId id) {
  engine::Handle handle;
  {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(id);
    if (it == pending_.end()) throw unknown_handle(id);
    handle = it->second.handle;
  }
  // The entry leaves the table whether the operation succeeded or failed; its attachment is
  // destroyed (failure) or handed back (success) after the lock is released.
  auto take = [&](bool succeeded) {
    std::lock_guard lock(mutex_);
    auto node = pending_.extract(id);
    if (!node) throw unknown_handle(id);  // another thread waited for it meanwhile
    if (!node.mapped().name.empty()) names_[node.mapped().process_set].erase(node.mapped().name);
    if (succeeded && node.mapped().keeps_device_result)
      device_results_.emplace(id, node.mapped().handle);
    return node;
  };
  try {
    // Device work: done for the caller once its stream is ordered after it (stream-ordered, as
    // torch's nccl backend); host work: complete.
    handle.wait_stream_ordered();
  } catch (...) {
    auto failed = take(false);
    throw;
  }
  auto node = take(true);
  return {std::move(node.mapped().handle), std::move(node.mapped().attachment)};
}

void HandleTable::copy_device_result(HandleId id, std::span<void* const> destinations,
                                     void* stream) {
  engine::Handle handle;
  {
    std::lock_guard lock(mutex_);
    auto node = device_results_.extract(id);
    if (!node)
      throw CollectiveError(ErrorKind::invalid_argument,
                            "riseml: no device result for handle " + std::to_string(id));
    handle = std::move(node.mapped());
  }
  if (!destinations.empty()) handle.copy_device_outputs(destinations, stream);
}

void HandleTable::clear() {
  std::map<HandleId, Entry> pending;
  std::map<HandleId, engine::Handle> device_results;
  {
    std::lock_guard lock(mutex_);
    pending.swap(pending_);
    device_results.swap(device_results_);
    names_.clear();
  }
}

}  // namespace riseml::runtime
