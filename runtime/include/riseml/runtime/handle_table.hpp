// The operations a binding submitted and has not yet waited for, by number: the binding hands
// out the number (Horovod's handle), the table keeps the engine's handle and what the binding
// attached to it (the buffers the engine reads and writes, and whatever the binding needs to
// build its result), so that those stay alive until the operation is waited for.
// Thread-safe. Attachments are destroyed outside the table's lock, so an attachment whose
// destructor takes a lock of the binding's (Python's GIL) cannot deadlock with another thread
// that calls into the table while holding that lock.
#pragma once

#include <riseml/engine/engine.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace riseml::runtime {

using HandleId = std::int64_t;

// Opaque to the runtime; the binding casts it back (std::static_pointer_cast).
using Attachment = std::shared_ptr<void>;

struct CompletedOperation {
  engine::Handle handle;
  Attachment attachment;
};

class HandleTable {
 public:
  HandleTable() = default;
  HandleTable(const HandleTable&) = delete;
  HandleTable& operator=(const HandleTable&) = delete;

  // A name stays taken from submission until the caller waited for it (not only until the
  // engine completed it, which a fast peer may make happen between two calls): the same name
  // submitted twice before a wait is refused every time, not by chance (Horovod's
  // duplicate-name rule). Throws CollectiveError(invalid_argument) when `name` (non-empty) is
  // taken in `process_set`; else takes it. release_name() gives it back when the submission
  // failed.
  void take_name(int process_set, const std::string& name);
  void release_name(int process_set, const std::string& name);

  // `keeps_device_result`: an allgather or alltoall of device tensors, whose bytes stay on the device
  // after wait() until copy_device_result() takes them. Ids start at 1 and are never reused.
  // The name taken for it (take_name) is given back when it leaves the table.
  HandleId add(engine::Handle handle, Attachment attachment, bool keeps_device_result,
               int process_set = 0, std::string name = {});

  // True once the operation completed. Throws CollectiveError(invalid_argument) for an id that
  // is not in the table.
  bool poll(HandleId id) const;

  // Blocks until the operation completed (device tensors: until its work is queued on the GPU
  // and the request's stream is ordered after it, Handle::wait_stream_ordered) and takes it out
  // of the table; rethrows its CollectiveError (the entry is gone then too). Throws CollectiveError(invalid_argument) for
  // an id that is not in the table (never given, or already waited for).
  CompletedOperation wait(HandleId id);

  // After wait() of a device allgather or alltoall: copies its outputs (a grouped allgather's
  // one per tensor) to `destinations`, one each, on the same device (on `stream`, a
  // cudaStream_t; nullptr: the legacy default stream) and forgets it. No destinations: forgets
  // it only (the caller could not allocate its tensors).
  void copy_device_result(HandleId id, std::span<void* const> destinations, void* stream);

  // Forgets every operation (after the engines shut down, they all failed anyway).
  void clear();

 private:
  struct Entry {
    engine::Handle handle;
    Attachment attachment;
    bool keeps_device_result = false;
    int process_set = 0;
    std::string name;  // taken by take_name; empty: none
  };
  mutable std::mutex mutex_;
  std::map<HandleId, Entry> pending_;
  std::unordered_map<int, std::unordered_set<std::string>> names_;  // taken, per process set
  // Device allgathers between wait() (the caller learns the shape and allocates) and
  // copy_device_result().
  std::map<HandleId, engine::Handle> device_results_;
  HandleId next_id_ = 1;
};

}  // namespace riseml::runtime
