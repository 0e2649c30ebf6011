#include "device_path.hpp"

#include "store_mailbox.hpp"

#include <stdexcept>
#include <utility>

namespace riseml::torch_distributed {

namespace {

// The stand-in's sends and receives: their own space of the mailbox, without tags (NCCL has
// none); all sends are written before the first receive waits, as one NCCL group posts both.
constexpr std::string_view kDeviceSpace = "device-p2p/";

class HostCollectives final : public DeviceCollectives {
 public:
  HostCollectives(Communicator& cpu, StoreMailbox& mailbox) : cpu_(cpu), mailbox_(mailbox) {}
  void allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op) override {
    cpu_.allreduce(buffer, buffer, count, type, op);
  }
  void broadcast(void* buffer, std::size_t count, DataType type, int root) override {
    cpu_.broadcast(buffer, count, type, root);
  }
  void allgatherv(const void* in, void* out, std::span<const std::size_t> counts,
                  DataType type) override {
    cpu_.allgatherv(in, out, counts, type);
  }
  void reduce_scatter(const void* in, void* out, std::size_t count, DataType type,
                      ReduceOp op) override {
    cpu_.reduce_scatter(in, out, count, type, op);
  }
  void alltoallv(const void* in, std::span<const std::size_t> send_counts, void* out,
                 std::span<const std::size_t> recv_counts, DataType type) override {
    cpu_.alltoallv(in, send_counts, out, recv_counts, type);
  }
  void exchange(std::span<const PeerSend> sends,
                std::span<const PeerReceive> receives) override {
    for (const PeerSend& s : sends) mailbox_.post(kDeviceSpace, s.peer, 0, s.data, s.bytes);
    for (const PeerReceive& r : receives)
      mailbox_.take("recv", kDeviceSpace, r.peer, 0, r.data, r.bytes);
  }

 private:
  Communicator& cpu_;
  StoreMailbox& mailbox_;
};

class HostStandinPath final : public DevicePath {
 public:
  HostStandinPath(Communicator& cpu, StoreMailbox& mailbox) : cpu_(cpu), mailbox_(mailbox) {}
  std::vector<c10::Device> devices() const override { return {}; }
  std::shared_ptr<DeviceTicket> begin(const std::vector<at::Tensor>&) override {
    return std::make_shared<DeviceTicket>();
  }
  void run(DeviceTicket&, const std::function<void(DeviceCollectives&)>& body,
           const std::function<void()>& succeed) override {
    if (!collectives_) {
      // As GpuCollectives' set-up (the NCCL id travels over the CPU communicator): a
      // collective, which hangs or fails if the ranks' device ops are out of order.
      cpu_.barrier();
      collectives_ = std::make_unique<HostCollectives>(cpu_, mailbox_);
    }
    body(*collectives_);
    succeed();
  }

 private:
  Communicator& cpu_;
  StoreMailbox& mailbox_;
  std::unique_ptr<HostCollectives> collectives_;
};

}  // namespace

std::unique_ptr<DevicePath> make_host_standin_path(Communicator& cpu, StoreMailbox& mailbox) {
  return std::make_unique<HostStandinPath>(cpu, mailbox);
}

bool gpu_path_built() { return RISEML_TORCH_GPU != 0; }

std::string gpu_path_why_off() {
#ifdef RISEML_TORCH_GPU_WHY_OFF
  return RISEML_TORCH_GPU_WHY_OFF;
#else
  return "";
#endif
}

std::string device_refusal(std::string_view operation) {
  const std::string op(operation);
  if (gpu_path_built())
    return "riseml " + op + ": CUDA tensors are not supported by this op (riseml runs "
           "allreduce, allreduce_coalesced, broadcast, allgather, all_gather_into_tensor, "
           "reduce_scatter, reduce_scatter_tensor, their coalesced forms, all_to_all, "
           "all_to_all_single, reduce, gather, scatter, send and recv (from a given rank) on "
           "CUDA tensors); for the others use init_process_group(backend=\"cpu:riseml,"
           "cuda:nccl\"), which runs CUDA tensors on NCCL";
#if RISEML_TORCH_MAJOR >= 2
  const std::string instead = "init_process_group(backend=\"cpu:riseml,cuda:nccl\")";
#else
  const std::string instead = "backend \"nccl\" (torch 2 takes \"cpu:riseml,cuda:nccl\")";
#endif
  return "riseml " + op + ": this riseml was built without GPU support (" + gpu_path_why_off() +
         "), so it takes no CUDA tensors; use " + instead + " for CUDA tensors, or rebuild "
         "riseml with CUDA (a CUDA build of torch 2, nvcc and NCCL)";
}

#if !RISEML_TORCH_GPU
std::unique_ptr<DevicePath> make_gpu_path(Communicator&, c10::Device,
                                          std::chrono::milliseconds) {
  throw std::logic_error("riseml: make_gpu_path in a build without the GPU path");
}
#endif

}  // namespace riseml::torch_distributed
