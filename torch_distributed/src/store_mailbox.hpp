// Point-to-point messages through the group's c10d store (torch's send and recv of CPU
// tensors, and the device path's host stand-in): a message is one key, numbered per (space,
// source, destination, tag) in call order on each side, so the n-th send from a to b with a
// tag meets the n-th receive at b from a (or from any rank) with it. A send writes its key at
// once and never waits for the receiver; a receive polls (not store.wait(): a client store may
// hold its one connection for a whole wait, which would hold up this rank's sends).
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

namespace riseml::torch_distributed {

class StoreMailbox {
 public:
  // `prefix`: the group's own key prefix; `closing` is set while the group goes (a receive
  // that still waits then gives up at once).
  StoreMailbox(c10::intrusive_ptr<c10d::Store> store, std::string prefix, int rank, int size,
               std::chrono::milliseconds timeout, const std::atomic<bool>& closing);

  // The message from this rank to `dst`, written now. Throws what the store throws.
  void post(std::string_view space, int dst, int tag, const void* data, std::size_t bytes);

  // Waits (at most the timeout) for the next message from `src` (this rank itself too; -1:
  // any other rank) with `tag`
  // and copies it into `data`, which holds `bytes`; returns the sender. Throws
  // std::runtime_error naming `operation`, the sender and what went wrong (nothing sent in
  // time, a size that differs, the store gone).
  int take(std::string_view operation, std::string_view space, int src, int tag, void* data,
           std::size_t bytes);

 private:
  std::string key(bool sending, std::string_view space, int src, int dst, int tag, bool advance);

  c10::intrusive_ptr<c10d::Store> store_;
  std::string prefix_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  const std::atomic<bool>& closing_;
  std::mutex mutex_;
  // (space, src, dst, tag) -> the next message's number, of this rank's sends and receives
  std::map<std::tuple<std::string, int, int, int>, std::uint64_t> sent_;
  std::map<std::tuple<std::string, int, int, int>, std::uint64_t> received_;
};

}  // namespace riseml::torch_distributed
