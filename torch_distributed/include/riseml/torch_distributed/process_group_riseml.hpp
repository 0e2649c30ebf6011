// The `riseml` backend of torch.distributed: a c10d Backend (torch 2.x; on torch 1.13, where
// backends are ProcessGroups, a ProcessGroup) whose collectives run on the
// riseml core (shared memory within a host, authenticated TCP across hosts). Every operation is
// queued to one worker thread per group (a caller blocked in Work::wait runs the queue itself
// while the worker is idle) and returns a Work whose future completes with the output tensors;
// a failure (a dead or silent peer, a mismatch) fails that Work on every rank with the core's
// message, which names the rank at fault.
#pragma once

#include <riseml/communicator.hpp>

#include <torch/csrc/distributed/c10d/Store.hpp>
#if RISEML_TORCH_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <functional>
#include <vector>

namespace riseml::torch_distributed {

class OpQueue;
class StoreRendezvous;
class ScratchBuffers;
class DeviceCollectives;
class DevicePath;
class RisemlWork;
class StoreMailbox;

struct ProcessGroupOptions {
  // Everything but the timeout, which is the group's (init_process_group / new_group timeout).
  CommunicatorOptions communicator;
  // The secret connections authenticate with. Unset: group rank 0 draws one and shares it
  // through the store (as secret as the store is).
  std::optional<std::vector<std::byte>> job_secret;
  // Tests only (RISEML_TORCH_DEVICE_STANDIN=1 in _riseml_c10d): CPU tensors take the device
  // path (the one of CUDA tensors) on a host-memory stand-in of the GPU collectives, so that CI
  // without a GPU runs its logic; the ops the device path lacks refuse them as CUDA tensors.
  bool device_standin = false;
};

// Whether this build takes CUDA tensors (torch 2 with CUDA and riseml's GPU support).
bool cuda_tensors_supported();

// Waits (at most `limit`) until no riseml process group of this process has a collective queued
// or running, or holds a tensor of one that ended. Called at the interpreter's exit (atexit, the
// GIL released) so that no worker thread drops a tensor while Python finalizes. Returns whether
// every group was idle in time.
bool wait_until_collectives_idle(std::chrono::milliseconds limit);

// What torch's backends derive from: torch 2 split the ProcessGroup (the user's handle, one per
// group) from the Backend (one per device type of a group).
#if RISEML_TORCH_MAJOR >= 2
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif

class ProcessGroupRiseml : public BackendBase {
 public:
  // Collective over the group's members: sets up the core's transports through `store`.
  // Throws std::runtime_error naming the cause (a rank that did not arrive, a bad option).
  ProcessGroupRiseml(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                     std::chrono::milliseconds timeout, const ProcessGroupOptions& options);
  ~ProcessGroupRiseml() override;

  const std::string getBackendName() const override { return "riseml"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& output_lists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
#if RISEML_TORCH_MAJOR >= 2
  // torch 2.x: the coalesced forms FSDP uses (one all-gather / reduce-scatter per bucket of
  // flat tensors), each one core call over the packed tensors.
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  // split_group: a new riseml backend over `ranks` (global ranks of this group's world),
  // set up through `store` (namespaced by torch for the new group).
  bool supportsSplitting() const override { return true; }
  // init_process_group / new_group with a device_id: torch calls this on every rank. The device
  // collectives (the NCCL communicator, a collective of the whole group) are set up now, in op
  // order, instead of at the first CUDA op, so that op may be a send between two of the ranks.
  void eagerConnectSingleDevice(at::Device device) override;
  // torch's batch_isend_irecv and _coalescing_manager: between start and end, sends and
  // receives of device tensors are held and posted as one batch at the end (one NCCL group:
  // no order of them within the batch can deadlock); every other op runs at its call. The end's
  // Work completes when every op of the block has.
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  // What split_group hands split() (torch clones it): the backend's name and timeout.
  c10::intrusive_ptr<Options> getBackendOptions() override {
    return c10::make_intrusive<Options>("riseml", timeout_);
  }
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store,
                                          const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;
#endif
  // Rank 0 waits for every other rank's arrival, through the store, up to the timeout, then
  // names the ranks that did not arrive (all of them with wait_all_ranks, else the first).
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override;
  // Point to point through the store: correct (messages of one sender, receiver and tag arrive
  // in order) but not fast, as every byte passes the store's server. Receives run on their own
  // thread, polling the store, so a pending recv holds up neither the group's collectives nor
  // this rank's sends (which are written to the store at once).
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override;
  // The Work's sourceRank() says which rank the message came from.
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors,
                                               int tag) override;

 private:
  c10::intrusive_ptr<c10d::Work> enqueue(const std::shared_ptr<OpQueue>& queue, c10d::OpType type,
                                         std::vector<at::Tensor> outputs,
                                         std::function<void()> run);
  // Device ops (device_path.hpp): `used` are the tensors the op reads or writes, `body` runs
  // on the worker with the path's collectives on its stream.
  c10::intrusive_ptr<c10d::Work> enqueue_device(
      c10d::OpType type, std::vector<at::Tensor> outputs, const std::vector<at::Tensor>& used,
      std::function<void(DeviceCollectives&)> body);
  // Whether `tensors` take the device path (CUDA tensors, or any with the stand-in); throws
  // naming `operation` when they cannot (a build without it, mixed or other devices).
  bool on_device(const std::vector<at::Tensor>& tensors, std::string_view operation);
  // For ops without a device path: throws device_refusal when a tensor would take it.
  void host_only(std::string_view operation, const std::vector<at::Tensor>& a,
                 const std::vector<at::Tensor>& b = {});
  // The store key of the next message from src to dst with `tag`; `take` uses up the number.
  // allreduce of a sparse COO tensor (SUM): an allgather of every rank's indices and values.
  c10::intrusive_ptr<c10d::Work> sparse_allreduce(at::Tensor& tensor,
                                                  const c10d::AllreduceOptions& opts);
  c10::intrusive_ptr<c10d::Work> receive(std::vector<at::Tensor>& tensors, int src_rank,
                                         int tag);  // src_rank -1: any
  // send and recv of device tensors: one batch of its own, or held for the coalescing block's.
  c10::intrusive_ptr<c10d::Work> device_p2p(std::vector<at::Tensor>& tensors, int peer,
                                            bool is_send);
  struct HeldTransfer;  // a device send or receive held until endCoalescing
  void post_device_batch(std::vector<HeldTransfer> batch);
  // A device op into the queue: `body` on the path's collectives, then every work succeeds
  // (or every one fails with what it threw).
  void post_device(DevicePath& path, c10d::OpType type, const std::vector<at::Tensor>& used,
                   std::vector<c10::intrusive_ptr<RisemlWork>> works,
                   std::function<void(DeviceCollectives&)> body);
  // The path for device tensors on `device` (made at the first device op).
  DevicePath& device_path(const c10::Device& device, c10d::OpType type);
  // Every Work an op returns passes here: inside a coalescing block, endCoalescing's Work waits
  // for it.
  c10::intrusive_ptr<c10d::Work> track(c10::intrusive_ptr<c10d::Work> work);

  c10::intrusive_ptr<c10d::Store> store_;
  std::chrono::milliseconds timeout_;
  ProcessGroupOptions options_;  // what split() hands to the new group
  std::unique_ptr<StoreRendezvous> rendezvous_;  // also serves the monitored barrier
  std::unique_ptr<Communicator> communicator_;
  std::unique_ptr<ScratchBuffers> scratch_;  // the worker thread's reusable buffers
  std::uint64_t monitored_barriers_ = 0;
  std::atomic<bool> destroying_{false};
  std::unique_ptr<StoreMailbox> mailbox_;  // send and recv of CPU tensors (and the stand-in's)
  std::mutex coalescing_mutex_;
  bool coalescing_ = false;  // between startCoalescing and endCoalescing
  std::vector<c10::intrusive_ptr<c10d::Work>> coalesced_works_;
  std::vector<HeldTransfer> held_transfers_;
  std::mutex device_mutex_;
  std::unique_ptr<DevicePath> device_path_;  // made at the first device op (set-up: its first run)
  std::shared_ptr<OpQueue> queue_;      // collectives, in call order (Works hold it weakly)
  std::shared_ptr<OpQueue> p2p_queue_;  // receives, in call order
};

}  // namespace riseml::torch_distributed
