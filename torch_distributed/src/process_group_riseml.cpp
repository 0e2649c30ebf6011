#include <riseml/torch_distributed/process_group_riseml.hpp>

#include "coalesced_work.hpp"
#include "device_path.hpp"
#include "op_queue.hpp"
#include "riseml_work.hpp"
#include "scratch_buffers.hpp"
#include "store_mailbox.hpp"
#include "store_rendezvous.hpp"
#include "tensor_types.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

namespace riseml::torch_distributed {

namespace {

[[noreturn]] void refuse(std::string_view operation, const std::string& why) {
  throw std::invalid_argument("riseml " + std::string(operation) + ": " + why);
}

void expect_one(const std::vector<at::Tensor>& tensors, std::string_view operation) {
  if (tensors.size() != 1)
    refuse(operation, "takes a list of exactly one tensor per process (got " +
                          std::to_string(tensors.size()) + ")");
}

void check_root(int root, int size, std::string_view operation) {
  if (root < 0 || root >= size)
    refuse(operation, "root rank " + std::to_string(root) + " is outside the group (0.." +
                          std::to_string(size - 1) + ")");
}

// Every tensor of a list is one the core takes, all of one dtype; their total element count.
int64_t check_list(const std::vector<at::Tensor>& tensors, std::string_view operation) {
  int64_t total = 0;
  for (const auto& t : tensors) {
    core_view(t, operation);
    if (t.scalar_type() != tensors.front().scalar_type())
      refuse(operation, "all tensors of one call must have one dtype");
    total += t.numel();
  }
  return total;
}

// `tensors` back to back in `flat` (which holds their total).
void pack(const std::vector<at::Tensor>& tensors, at::Tensor& flat) {
  int64_t offset = 0;
  for (const auto& t : tensors) {
    flat.narrow(0, offset, t.numel()).copy_(t.reshape({-1}));
    offset += t.numel();
  }
}

// A flat view of `tensors`: themselves when they lie back to back, else packed into `slot`.
at::Tensor flat_view(const std::vector<at::Tensor>& tensors, ScratchBuffers& scratch, int slot) {
  int64_t total = 0;
  for (const auto& t : tensors) total += t.numel();
  if (back_to_back(tensors) != nullptr && tensors.front().numel() > 0)
    return at::from_blob(tensors.front().data_ptr(), {total}, tensors.front().options());
  at::Tensor flat = scratch.take(slot, total, tensors.front().options());
  pack(tensors, flat);
  return flat;
}

// Copies consecutive pieces of `flat` back into `tensors`.
void unflatten(const at::Tensor& flat, std::vector<at::Tensor>& tensors) {
  int64_t offset = 0;
  for (auto& t : tensors) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

std::vector<std::size_t> counts_of(const std::vector<at::Tensor>& tensors) {
  std::vector<std::size_t> counts;
  for (const auto& t : tensors) counts.push_back(core_view(t, "counts").count);
  return counts;
}

// Fails `work` with the exception in flight. The core's message names the rank at fault; the
// kind up front says what happened, in the words torch's own backends use (scripts and tests
// match "Timed out").
void fail_current(RisemlWork& work, c10d::OpType type) {
  try {
    throw;
  } catch (const CollectiveError& e) {
    const char* kind = e.kind() == ErrorKind::timeout       ? "Timed out: "
                       : e.kind() == ErrorKind::peer_failed ? "a peer failed: "
                       : e.kind() == ErrorKind::aborted     ? "the group failed earlier: "
                                                            : "";
    work.fail(std::make_exception_ptr(std::runtime_error(
        "riseml " + c10d::opTypeToString(type) + " failed: " + kind + e.what())));
  } catch (...) {
    work.fail(std::current_exception());
  }
}

// A flat tensor over `tensors` for a device op (on the worker, on the path's stream): themselves
// when they lie back to back, else a packed copy.
at::Tensor device_flat(const std::vector<at::Tensor>& tensors) {
  int64_t total = 0;
  for (const auto& t : tensors) total += t.numel();
  const at::Tensor& first = tensors.front();
  if (back_to_back(tensors) != nullptr && first.numel() > 0)
    return at::for_blob(first.data_ptr(), {total})
        .options(first.options())
        .target_device(first.device())
        .make_tensor();
  std::vector<at::Tensor> flat;
  for (const auto& t : tensors) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

// A contiguous tensor flat in the core's elements (complex: its real pairs), a view of it.
at::Tensor as_core(const at::Tensor& t) {
  return t.is_complex() ? at::view_as_real(t).reshape({-1}) : t.reshape({-1});
}

// A contiguous tensor's bytes, a view of it.
[[maybe_unused]] at::Tensor as_bytes(const at::Tensor& t) { return as_core(t).view(at::kByte); }

// The counts of an allgather of `count` elements from each of `size` ranks.
std::vector<std::size_t> equal_counts(int size, std::size_t count) {
  return std::vector<std::size_t>(static_cast<std::size_t>(size), count);
}

// A valid pointer for the core when a rank contributes or receives nothing.
std::byte* nothing() {
  static std::byte byte;
  return &byte;
}

}  // namespace

// A device send or receive held in a coalescing block, with the Work its call returned.
struct ProcessGroupRiseml::HeldTransfer {
  at::Tensor tensor;
  int peer = -1;
  bool is_send = false;
  c10::intrusive_ptr<RisemlWork> work;
};

ProcessGroupRiseml::ProcessGroupRiseml(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                       int size, std::chrono::milliseconds timeout,
                                       const ProcessGroupOptions& options)
    : BackendBase(rank, size), store_(store), timeout_(timeout), options_(options) {
  CommunicatorOptions communicator_options = options.communicator;
  communicator_options.timeout = timeout;
  try {
    rendezvous_ =
        std::make_unique<StoreRendezvous>(store_, rank, size, timeout, options.job_secret);
    communicator_ = std::make_unique<Communicator>(*rendezvous_, communicator_options);
    mailbox_ = std::make_unique<StoreMailbox>(store_, rendezvous_->key(""), rank, size, timeout,
                                              destroying_);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("riseml: setting up the process group failed: ") +
                             e.what());
  }
  scratch_ = std::make_unique<ScratchBuffers>();
  queue_ = std::make_shared<OpQueue>();
  p2p_queue_ = std::make_shared<OpQueue>();
  init();
}

ProcessGroupRiseml::~ProcessGroupRiseml() {
  // The queues run what was submitted before the communicator goes; a receive that still waits
  // gives up at once rather than for the whole timeout.
  destroying_ = true;
  p2p_queue_.reset();
  queue_.reset();
  device_path_.reset();  // before the communicator its collectives use
}

bool cuda_tensors_supported() { return gpu_path_built(); }

bool wait_until_collectives_idle(std::chrono::milliseconds limit) { return OpQueue::wait_all_idle(limit); }

bool ProcessGroupRiseml::on_device(const std::vector<at::Tensor>& tensors,
                                   std::string_view operation) {
  bool cuda = false;
  bool other = false;
  for (const auto& t : tensors) {
    if (!t.defined()) continue;
    (t.is_cuda() ? cuda : other) = true;
  }
  if (!cuda) return options_.device_standin && other;
  if (!gpu_path_built()) throw std::invalid_argument(device_refusal(operation));
  if (other) refuse(operation, "takes CUDA tensors or CPU tensors, not both in one call");
  for (const auto& t : tensors)
    if (t.defined() && t.device() != tensors.front().device())
      refuse(operation, "all tensors of one call must be on one CUDA device");
  return true;
}

void ProcessGroupRiseml::host_only(std::string_view operation, const std::vector<at::Tensor>& a,
                                   const std::vector<at::Tensor>& b) {
  for (const auto* list : {&a, &b})
    for (const auto& t : *list)
      if (t.defined() && (t.is_cuda() || options_.device_standin))
        throw std::invalid_argument(device_refusal(operation));
}

DevicePath& ProcessGroupRiseml::device_path(const c10::Device& device, c10d::OpType type) {
  DevicePath* path = nullptr;
  {
    std::lock_guard lock(device_mutex_);
    if (!device_path_)
      device_path_ = options_.device_standin ? make_host_standin_path(*communicator_, *mailbox_)
                                             : make_gpu_path(*communicator_, device, timeout_);
    path = device_path_.get();
  }
  const std::vector<c10::Device> devices = path->devices();
  if (!devices.empty() && devices.front() != device)
    refuse(c10d::opTypeToString(type),
           "this process group runs its CUDA collectives on " + devices.front().str() +
               " (its first CUDA tensor's device), got a tensor on " + device.str() +
               "; call torch.cuda.set_device(local_rank) before the first collective and keep "
               "one device per process");
  return *path;
}

#if RISEML_TORCH_MAJOR >= 2
void ProcessGroupRiseml::eagerConnectSingleDevice(at::Device device) {
  if (!device.is_cuda() && !options_.device_standin) return;  // CPU tensors need no set-up
  if (device.is_cuda() && !gpu_path_built())
    throw std::invalid_argument(device_refusal("init_process_group(device_id=" + device.str() + ")"));
  const auto type = c10d::OpType::UNKNOWN;
  DevicePath& path = device_path(device, type);
  auto work = c10::make_intrusive<RisemlWork>(rank_, type, std::vector<at::Tensor>{}, queue_,
                                              path.devices());
  post_device(path, type, {}, {work}, [](DeviceCollectives&) {});  // run() sets up, body idle
  try {
    work->wait();
  } catch (const std::exception& e) {  // named for what the user called, not op UNKNOWN
    std::string why = e.what();
    const std::string generic = "riseml " + c10d::opTypeToString(type) + " failed: ";
    if (why.rfind(generic, 0) == 0) why.erase(0, generic.size());
    throw std::runtime_error("riseml: init_process_group(device_id=" + device.str() +
                             ") could not set up the group's collectives on that device: " + why);
  }
}
#endif

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::track(c10::intrusive_ptr<c10d::Work> work) {
  std::lock_guard lock(coalescing_mutex_);
  if (!coalescing_) return work;
  // A block left open (an exception inside torch's _coalescing_manager never ends it) must not
  // keep every later op's tensors: the works already done well need no waiting.
  if (coalesced_works_.size() >= 1024)
    std::erase_if(coalesced_works_, [](const c10::intrusive_ptr<c10d::Work>& w) {
      return w->isCompleted() && !w->exception();
    });
  coalesced_works_.push_back(work);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::enqueue_device(
    c10d::OpType type, std::vector<at::Tensor> outputs, const std::vector<at::Tensor>& used,
    std::function<void(DeviceCollectives&)> body) {
  DevicePath& path = device_path(used.front().device(), type);
  auto work =
      c10::make_intrusive<RisemlWork>(rank_, type, std::move(outputs), queue_, path.devices());
  post_device(path, type, used, {work}, std::move(body));
  return track(work);
}

void ProcessGroupRiseml::post_device(DevicePath& path, c10d::OpType type,
                                     const std::vector<at::Tensor>& used,
                                     std::vector<c10::intrusive_ptr<RisemlWork>> works,
                                     std::function<void(DeviceCollectives&)> body) {
  std::shared_ptr<DeviceTicket> ticket;
  try {
    ticket = path.begin(used);
  } catch (...) {
    for (const auto& w : works) fail_current(*w, type);  // nobody waits on them forever
    throw;
  }
  for (const auto& w : works) {
    w->set_after_wait([ticket] { ticket->wait_done(); });
    w->set_device_finished([ticket] { return ticket->finished(); });
  }
  queue_->push([works = std::move(works), type, ticket, path = &path, body = std::move(body)] {
    try {
      path->run(*ticket, body, [&works] {
        for (const auto& w : works) w->succeed();
      });
    } catch (...) {
      for (const auto& w : works) fail_current(*w, type);
    }
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::enqueue(const std::shared_ptr<OpQueue>& queue,
                                                           c10d::OpType type,
                                                           std::vector<at::Tensor> outputs,
                                                           std::function<void()> run) {
  auto work = c10::make_intrusive<RisemlWork>(rank_, type, std::move(outputs), queue);
  queue->push([work, type, run = std::move(run)] {
    try {
      run();
      work->succeed();
    } catch (...) {
      fail_current(*work, type);
    }
  });
  return track(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::broadcast(std::vector<at::Tensor>& tensors,
                                                             const c10d::BroadcastOptions& opts) {
  expect_one(tensors, "broadcast");
  check_root(static_cast<int>(opts.rootRank), size_, "broadcast");
  const int root = static_cast<int>(opts.rootRank);
  if (on_device(tensors, "broadcast")) {
    const CoreView v = device_view(tensors[0], "broadcast");
    return enqueue_device(c10d::OpType::BROADCAST, tensors, tensors,
                          [v, root](DeviceCollectives& d) {
                            if (v.count > 0) d.broadcast(v.data, v.count, v.type, root);
                          });
  }
  const CoreView v = core_view(tensors[0], "broadcast");
  return enqueue(queue_, c10d::OpType::BROADCAST, tensors, [this, v, root] {
    communicator_->broadcast(v.data, v.count, v.type, root);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  expect_one(tensors, "allreduce");
  at::Tensor t = tensors[0];
  if (t.defined() && t.layout() == at::kSparse) return sparse_allreduce(t, opts);
  if (on_device(tensors, "allreduce")) {
    const CoreView v = device_view(t, "allreduce");
    const ReduceOp op = device_reduction(opts.reduceOp, t, "allreduce");
    return enqueue_device(c10d::OpType::ALLREDUCE, tensors, tensors,
                          [v, op](DeviceCollectives& d) {
                            if (v.count > 0) d.allreduce(v.data, v.count, v.type, op);
                          });
  }
  const CoreView v = core_view(t, "allreduce");
  const Reduction r = reduction_for(opts.reduceOp, t, "allreduce");
  return enqueue(queue_, c10d::OpType::ALLREDUCE, tensors, [this, t, v, r]() mutable {
    if (r.bitwise == Bitwise::none) {
      communicator_->allreduce(v.data, v.data, v.count, v.type, r.op);
      return;
    }
    at::Tensor all = at::empty({size_, t.numel()}, t.options());
    communicator_->allgather(v.data, all.data_ptr(), v.count, v.type);
    fold_bitwise(r.bitwise, t, all.unbind(0));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::sparse_allreduce(
    at::Tensor& tensor, const c10d::AllreduceOptions& opts) {
  if (opts.reduceOp.op_ != c10d::ReduceOp::SUM)
    refuse("allreduce", "sparse tensors reduce with SUM only");
  if (!tensor.device().is_cpu()) refuse("allreduce", "sparse tensors must be CPU tensors");
  core_view(at::empty({0}, tensor.options().layout(at::kStrided)), "allreduce");  // the dtype
  at::Tensor t = tensor;
  return enqueue(queue_, c10d::OpType::ALLREDUCE, {tensor}, [this, t]() mutable {
    // Every rank's (index, value) pairs to every rank, then one coalesce: duplicates add up in
    // the same order everywhere, so every rank ends with the same bits.
    const at::Tensor mine = t.coalesce();
    const int64_t sparse_dim = mine.sparse_dim();
    const at::Tensor indices = mine._indices().t().contiguous();  // nnz x sparse_dim
    const at::Tensor values = mine._values().contiguous();        // nnz x dense sizes
    int64_t row = 1;  // elements of one value (the dense part), also when this rank has none
    for (int64_t d = 1; d < values.dim(); ++d) row *= values.size(d);
    at::Tensor nnz = at::empty({size_}, at::kLong);
    const int64_t my_nnz = mine._nnz();
    communicator_->allgather(&my_nnz, nnz.data_ptr(), 1, DataType::int64);
    std::vector<std::size_t> index_counts, value_counts;
    int64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      const int64_t n = nnz[r].item<int64_t>();
      index_counts.push_back(static_cast<std::size_t>(n * sparse_dim));
      value_counts.push_back(static_cast<std::size_t>(n * row));
      total += n;
    }
    at::Tensor all_indices = at::empty({total, sparse_dim}, at::kLong);
    std::vector<int64_t> value_shape = values.sizes().vec();
    value_shape[0] = total;
    at::Tensor all_values = at::empty(value_shape, values.options());
    communicator_->allgatherv(indices.numel() ? indices.data_ptr() : nothing(),
                              total ? all_indices.data_ptr() : nothing(), index_counts,
                              DataType::int64);
    const CoreView v = core_view(values, "allreduce");
    if (values.is_complex())
      for (auto& c : value_counts) c *= 2;  // complex values travel as pairs of reals
    communicator_->allgatherv(values.numel() ? values.data_ptr() : nothing(),
                              total ? all_values.data_ptr() : nothing(), value_counts, v.type);
    t.copy_(at::sparse_coo_tensor(all_indices.t(), all_values, t.sizes()).coalesce());
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  if (tensors.empty()) refuse("allreduce_coalesced", "needs at least one tensor");
  if (on_device(tensors, "allreduce_coalesced")) {
    for (const auto& t : tensors) {
      device_view(t, "allreduce_coalesced");
      if (t.scalar_type() != tensors.front().scalar_type())
        refuse("allreduce_coalesced", "all tensors of one call must have one dtype");
    }
    const ReduceOp op = device_reduction(opts.reduceOp, tensors.front(), "allreduce_coalesced");
    std::vector<at::Tensor> outs = tensors;
    return enqueue_device(c10d::OpType::ALLREDUCE_COALESCED, tensors, tensors,
                          [outs, op](DeviceCollectives& d) mutable {
                            at::Tensor flat = device_flat(outs);
                            const CoreView v = device_view(flat, "allreduce_coalesced");
                            if (v.count > 0) d.allreduce(v.data, v.count, v.type, op);
                            if (back_to_back(outs) == nullptr) unflatten(flat, outs);
                          });
  }
  check_list(tensors, "allreduce_coalesced");
  const Reduction r = reduction_for(opts.reduceOp, tensors.front(), "allreduce_coalesced");
  std::vector<at::Tensor> outputs = tensors;
  return enqueue(queue_, c10d::OpType::ALLREDUCE_COALESCED, tensors,
                 [this, r, outputs]() mutable {
                   at::Tensor flat = flat_view(outputs, *scratch_, 0);
                   const CoreView v = core_view(flat, "allreduce_coalesced");
                   if (r.bitwise == Bitwise::none) {
                     communicator_->allreduce(v.data, v.data, v.count, v.type, r.op);
                   } else {
                     at::Tensor all = at::empty({size_, flat.numel()}, flat.options());
                     communicator_->allgather(v.data, all.data_ptr(), v.count, v.type);
                     fold_bitwise(r.bitwise, flat, all.unbind(0));
                   }
                   if (back_to_back(outputs) == nullptr) unflatten(flat, outputs);
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::reduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::ReduceOptions& opts) {
  expect_one(tensors, "reduce");
  const int root = static_cast<int>(opts.rootRank);
  check_root(root, size_, "reduce");
  at::Tensor t = tensors[0];
  if (on_device(tensors, "reduce")) {
    const CoreView v = device_view(t, "reduce");
    const ReduceOp op = device_reduction(opts.reduceOp, t, "reduce");
    const bool mine = rank_ == root;
    // An allreduce: on the root's tensor, on a copy elsewhere (their tensors stay as they are).
    return enqueue_device(c10d::OpType::REDUCE, tensors, tensors,
                          [t, v, op, mine](DeviceCollectives& d) {
                            if (v.count == 0) return;
                            if (mine) {
                              d.allreduce(v.data, v.count, v.type, op);
                              return;
                            }
                            at::Tensor copy = t.clone();
                            d.allreduce(copy.data_ptr(), v.count, v.type, op);
                          });
  }
  const CoreView v = core_view(t, "reduce");
  const Reduction r = reduction_for(opts.reduceOp, t, "reduce");
  return enqueue(queue_, c10d::OpType::REDUCE, tensors, [this, t, v, r, root]() mutable {
    if (r.bitwise != Bitwise::none) {
      at::Tensor all = at::empty({size_, t.numel()}, t.options());
      communicator_->allgather(v.data, all.data_ptr(), v.count, v.type);
      if (rank_ == root) fold_bitwise(r.bitwise, t, all.unbind(0));
      return;
    }
    // A reduce-scatter that gives the root everything and the others nothing.
    std::vector<std::size_t> counts(static_cast<std::size_t>(size_), 0);
    counts[static_cast<std::size_t>(root)] = v.count;
    if (rank_ == root) {
      at::Tensor input = scratch_->take(0, t.numel(), t.options());
      input.copy_(t.reshape({-1}));
      communicator_->reduce_scatterv(input.data_ptr(), v.data, counts, v.type, r.op);
    } else {
      communicator_->reduce_scatterv(v.data, nothing(), counts, v.type, r.op);
    }
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  expect_one(inputs, "allgather");
  if (outputs.size() != 1 || outputs[0].size() != static_cast<std::size_t>(size_))
    refuse("allgather", "takes one output list of " + std::to_string(size_) + " tensors");
  at::Tensor in = inputs[0];
  std::vector<at::Tensor> outs = outputs[0];
  std::vector<at::Tensor> used = outs;
  used.push_back(in);
  if (on_device(used, "allgather")) {
    const CoreView v = device_view(in, "allgather");
    check_same_shape(outs, in, "allgather", "output");
    for (const auto& t : outs) device_view(t, "allgather");
    const int size = size_;
    return enqueue_device(c10d::OpType::ALLGATHER, outs, used,
                          [in, v, outs, size](DeviceCollectives& d) mutable {
                            if (v.count == 0) return;
                            const auto counts = equal_counts(size, v.count);
                            if (void* base = back_to_back(outs)) {
                              d.allgatherv(v.data, base, counts, v.type);
                              return;
                            }
                            at::Tensor all = at::empty({size * in.numel()}, in.options());
                            d.allgatherv(v.data, all.data_ptr(), counts, v.type);
                            unflatten(all, outs);
                          });
  }
  const CoreView v = core_view(in, "allgather");
  check_same_shape(outputs[0], in, "allgather", "output");
  return enqueue(queue_, c10d::OpType::ALLGATHER, outs, [this, in, v, outs]() mutable {
    if (void* base = back_to_back(outs)) {  // e.g. chunks of one tensor: straight in
      communicator_->allgather(v.data, base, v.count, v.type);
      return;
    }
    at::Tensor all = scratch_->take(1, size_ * in.numel(), in.options());
    communicator_->allgather(v.data, all.data_ptr(), v.count, v.type);
    unflatten(all, outs);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions&) {
  if (on_device({output, input}, "_allgather_base")) {
    const CoreView in = device_view(input, "_allgather_base");
    const CoreView out = device_view(output, "_allgather_base");
    if (output.scalar_type() != input.scalar_type() || out.count != in.count * size_)
      refuse("_allgather_base", "the output must hold world size (" + std::to_string(size_) +
                                    ") times the input's elements, of the input's dtype");
    const int size = size_;
    return enqueue_device(c10d::OpType::_ALLGATHER_BASE, {output}, {output, input},
                          [in, out, size, input](DeviceCollectives& d) {
                            if (in.count > 0)
                              d.allgatherv(in.data, out.data, equal_counts(size, in.count),
                                           in.type);
                          });
  }
  const CoreView in = core_view(input, "_allgather_base");
  const CoreView out = core_view(output, "_allgather_base");
  if (output.scalar_type() != input.scalar_type() || out.count != in.count * size_)
    refuse("_allgather_base", "the output must hold world size (" + std::to_string(size_) +
                                  ") times the input's elements, of the input's dtype");
  at::Tensor keep_in = input;
  return enqueue(queue_, c10d::OpType::_ALLGATHER_BASE, {output}, [this, in, out, keep_in] {
    communicator_->allgather(in.data, out.data, in.count, in.type);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& output_lists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  host_only("allgather_coalesced", inputs);
  if (inputs.empty()) refuse("allgather_coalesced", "needs at least one input tensor");
  if (output_lists.size() != static_cast<std::size_t>(size_))
    refuse("allgather_coalesced", "needs one output list per rank (" + std::to_string(size_) +
                                      ")");
  for (const auto& list : output_lists) {
    if (list.size() != inputs.size())
      refuse("allgather_coalesced", "every output list must match the input list's length");
    for (std::size_t i = 0; i < list.size(); ++i)
      check_same_shape({list[i]}, inputs[i], "allgather_coalesced", "output");
  }
  check_list(inputs, "allgather_coalesced");
  std::vector<at::Tensor> ins = inputs;
  std::vector<std::vector<at::Tensor>> outs = output_lists;
  std::vector<at::Tensor> all_outputs;
  for (const auto& list : outs) all_outputs.insert(all_outputs.end(), list.begin(), list.end());
  return enqueue(queue_, c10d::OpType::ALLGATHER_COALESCED, all_outputs,
                 [this, ins, outs]() mutable {
                   at::Tensor flat = flat_view(ins, *scratch_, 0);
                   const CoreView v = core_view(flat, "allgather_coalesced");
                   at::Tensor all = scratch_->take(1, size_ * flat.numel(), flat.options());
                   communicator_->allgather(v.data, all.data_ptr(), v.count, v.type);
                   for (int r = 0; r < size_; ++r)
                     unflatten(all.narrow(0, r * flat.numel(), flat.numel()),
                               outs[static_cast<std::size_t>(r)]);
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  expect_one(inputs, "gather");
  const int root = static_cast<int>(opts.rootRank);
  check_root(root, size_, "gather");
  at::Tensor in = inputs[0];
  std::vector<at::Tensor> used = inputs;
  if (!outputs.empty()) used.insert(used.end(), outputs[0].begin(), outputs[0].end());
  const bool device = on_device(used, "gather");
  const CoreView v = device ? device_view(in, "gather") : core_view(in, "gather");
  std::vector<at::Tensor> outs;
  if (rank_ == root) {
    if (outputs.size() != 1 || outputs[0].size() != static_cast<std::size_t>(size_))
      refuse("gather", "the root takes one output list of " + std::to_string(size_) +
                           " tensors");
    check_same_shape(outputs[0], in, "gather", "output");
    outs = outputs[0];
  } else if (!outputs.empty() && !outputs[0].empty()) {
    refuse("gather", "only the root (rank " + std::to_string(root) + ") takes output tensors");
  }
  if (device) {
    for (const auto& t : outs) device_view(t, "gather");
    const int size = size_;
    const bool mine = rank_ == root;
    // As the host form below: an alltoall in which every rank sends only to the root.
    return enqueue_device(c10d::OpType::GATHER, outs, used,
                          [in, v, outs, root, size, mine](DeviceCollectives& d) mutable {
                            if (v.count == 0) return;
                            std::vector<std::size_t> send(static_cast<std::size_t>(size), 0);
                            std::vector<std::size_t> recv(static_cast<std::size_t>(size), mine ? v.count : 0);
                            send[static_cast<std::size_t>(root)] = v.count;
                            if (!mine) {
                              d.alltoallv(v.data, send, nothing(), recv, v.type);
                              return;
                            }
                            if (void* base = back_to_back(outs)) {
                              d.alltoallv(v.data, send, base, recv, v.type);
                              return;
                            }
                            at::Tensor all = at::empty({size * in.numel()}, in.options());
                            d.alltoallv(v.data, send, all.data_ptr(), recv, v.type);
                            unflatten(all, outs);
                          });
  }
  return enqueue(queue_, c10d::OpType::GATHER, outs, [this, in, v, outs, root]() mutable {
    std::vector<std::size_t> send(static_cast<std::size_t>(size_), 0);
    std::vector<std::size_t> recv(static_cast<std::size_t>(size_), 0);
    send[static_cast<std::size_t>(root)] = v.count;
    if (rank_ == root) {
      std::fill(recv.begin(), recv.end(), v.count);
      if (void* base = back_to_back(outs)) {
        communicator_->alltoallv(v.data, send, base, recv, v.type);
        return;
      }
      at::Tensor all = scratch_->take(1, size_ * in.numel(), in.options());
      communicator_->alltoallv(v.data, send, all.data_ptr(), recv, v.type);
      unflatten(all, outs);
    } else {
      communicator_->alltoallv(v.data, send, nothing(), recv, v.type);
    }
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  expect_one(outputs, "scatter");
  const int root = static_cast<int>(opts.rootRank);
  check_root(root, size_, "scatter");
  at::Tensor out = outputs[0];
  std::vector<at::Tensor> used = outputs;
  if (!inputs.empty()) used.insert(used.end(), inputs[0].begin(), inputs[0].end());
  const bool device = on_device(used, "scatter");
  const CoreView v = device ? device_view(out, "scatter") : core_view(out, "scatter");
  at::Tensor flat;
  if (rank_ == root) {
    if (inputs.size() != 1 || inputs[0].size() != static_cast<std::size_t>(size_))
      refuse("scatter", "the root takes one input list of " + std::to_string(size_) +
                            " tensors");
    check_same_shape(inputs[0], out, "scatter", "input");
    if (device) {
      for (const auto& t : inputs[0]) device_view(t, "scatter");
    } else {
      check_list(inputs[0], "scatter");
    }
    flat = at::cat(inputs[0]).reshape({-1});  // here: the caller may reuse its list at once
  } else if (!inputs.empty() && !inputs[0].empty()) {
    refuse("scatter", "only the root (rank " + std::to_string(root) + ") takes input tensors");
  }
  if (device) {
    // `flat` was made on the caller's stream: ours waits for it and keeps its memory.
    if (flat.defined()) used.push_back(flat);
    const int size = size_;
    const bool mine = rank_ == root;
    return enqueue_device(c10d::OpType::SCATTER, outputs, used,
                          [flat, v, root, size, mine](DeviceCollectives& d) {
                            if (v.count == 0) return;
                            std::vector<std::size_t> send(static_cast<std::size_t>(size), mine ? v.count : 0);
                            std::vector<std::size_t> recv(static_cast<std::size_t>(size), 0);
                            recv[static_cast<std::size_t>(root)] = v.count;
                            d.alltoallv(mine ? flat.data_ptr() : nothing(), send, v.data, recv, v.type);
                          });
  }
  return enqueue(queue_, c10d::OpType::SCATTER, outputs, [this, flat, v, root] {
    std::vector<std::size_t> send(static_cast<std::size_t>(size_), 0);
    std::vector<std::size_t> recv(static_cast<std::size_t>(size_), 0);
    recv[static_cast<std::size_t>(root)] = v.count;
    if (rank_ == root) {
      std::fill(send.begin(), send.end(), v.count);
      communicator_->alltoallv(flat.data_ptr(), send, v.data, recv, v.type);
    } else {
      communicator_->alltoallv(nothing(), send, v.data, recv, v.type);
    }
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  expect_one(outputs, "reduce_scatter");
  if (inputs.size() != 1 || inputs[0].size() != static_cast<std::size_t>(size_))
    refuse("reduce_scatter", "takes one input list of " + std::to_string(size_) + " tensors");
  at::Tensor out = outputs[0];
  std::vector<at::Tensor> used = inputs[0];
  used.push_back(out);
  if (on_device(used, "reduce_scatter")) {
    const CoreView v = device_view(out, "reduce_scatter");
    const ReduceOp op = device_reduction(opts.reduceOp, out, "reduce_scatter");
    std::vector<std::size_t> counts;
    for (const auto& t : inputs[0]) {
      if (t.scalar_type() != out.scalar_type())
        refuse("reduce_scatter", "input tensors must have the output's dtype");
      counts.push_back(device_view(t, "reduce_scatter").count);
    }
    if (counts[static_cast<std::size_t>(rank_)] != v.count)
      refuse("reduce_scatter", "this rank's input tensor must have as many elements as its output");
    std::vector<at::Tensor> ins = inputs[0];
    const int size = size_;
    return enqueue_device(c10d::OpType::REDUCE_SCATTER, outputs, used,
                          [ins, out, v, op, counts, size](DeviceCollectives& d) {
                            const std::size_t most = *std::max_element(counts.begin(), counts.end());
                            if (most == 0) return;
                            if (std::all_of(counts.begin(), counts.end(),
                                            [&](std::size_t c) { return c == most; })) {
                              const at::Tensor flat = device_flat(ins);
                              d.reduce_scatter(flat.data_ptr(), v.data, most, v.type, op);
                              return;
                            }
                            // Blocks of unequal size: each padded to the largest, so that one
                            // reduce-scatter of equal blocks serves (the padding is dropped).
                            at::Tensor padded = at::zeros({size, static_cast<int64_t>(most)},
                                                          as_core(out).options());
                            for (int r = 0; r < size; ++r) {
                              const auto n = static_cast<int64_t>(counts[static_cast<std::size_t>(r)]);
                              if (n) padded[r].narrow(0, 0, n).copy_(as_core(ins[static_cast<std::size_t>(r)]));
                            }
                            at::Tensor mine = at::empty({static_cast<int64_t>(most)}, padded.options());
                            d.reduce_scatter(padded.data_ptr(), mine.data_ptr(), most, v.type, op);
                            if (v.count) as_core(out).copy_(mine.narrow(0, 0, static_cast<int64_t>(v.count)));
                          });
  }
  const CoreView v = core_view(out, "reduce_scatter");
  const Reduction r = reduction_for(opts.reduceOp, out, "reduce_scatter");
  for (const auto& t : inputs[0])
    if (t.scalar_type() != out.scalar_type())
      refuse("reduce_scatter", "input tensors must have the output's dtype");
  if (inputs[0][static_cast<std::size_t>(rank_)].numel() != out.numel())
    refuse("reduce_scatter", "this rank's input tensor must have as many elements as its output");
  check_list(inputs[0], "reduce_scatter");
  std::vector<at::Tensor> ins = inputs[0];
  const std::vector<std::size_t> counts = counts_of(inputs[0]);
  return enqueue(queue_, c10d::OpType::REDUCE_SCATTER, outputs,
                 [this, ins, v, r, counts, out]() mutable {
                   at::Tensor flat = flat_view(ins, *scratch_, 0);
                   if (r.bitwise == Bitwise::none) {
                     communicator_->reduce_scatterv(flat.data_ptr(), v.data, counts, v.type, r.op);
                     return;
                   }
                   at::Tensor all = at::empty({size_, flat.numel()}, flat.options());
                   const CoreView f = core_view(flat, "reduce_scatter");
                   communicator_->allgather(f.data, all.data_ptr(), f.count, f.type);
                   int64_t offset = 0;
                   for (int i = 0; i < rank_; ++i) offset += static_cast<int64_t>(counts[static_cast<std::size_t>(i)]);
                   std::vector<at::Tensor> parts;
                   for (const auto& row : all.unbind(0)) parts.push_back(row.narrow(0, offset, out.numel()));
                   fold_bitwise(r.bitwise, out, parts);
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  if (on_device({output, input}, "_reduce_scatter_base")) {
    const CoreView in = device_view(input, "_reduce_scatter_base");
    const CoreView out = device_view(output, "_reduce_scatter_base");
    if (input.scalar_type() != output.scalar_type() || in.count != out.count * size_)
      refuse("_reduce_scatter_base", "the input must hold world size (" + std::to_string(size_) +
                                         ") times the output's elements, of the output's dtype");
    const ReduceOp op = device_reduction(opts.reduceOp, output, "_reduce_scatter_base");
    return enqueue_device(c10d::OpType::_REDUCE_SCATTER_BASE, {output}, {output, input},
                          [in, out, op, input](DeviceCollectives& d) {
                            if (out.count > 0) d.reduce_scatter(in.data, out.data, out.count, in.type, op);
                          });
  }
  const CoreView in = core_view(input, "_reduce_scatter_base");
  const CoreView out = core_view(output, "_reduce_scatter_base");
  if (input.scalar_type() != output.scalar_type() || in.count != out.count * size_)
    refuse("_reduce_scatter_base", "the input must hold world size (" + std::to_string(size_) +
                                       ") times the output's elements, of the output's dtype");
  std::vector<at::Tensor> inputs = at::chunk(input.reshape({-1}), size_);
  std::vector<std::vector<at::Tensor>> lists{inputs};
  std::vector<at::Tensor> outputs{output};
  return reduce_scatter(outputs, lists, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_split_sizes,
    std::vector<int64_t>& input_split_sizes, const c10d::AllToAllOptions&) {
  const bool device = on_device({output, input}, "alltoall_base");
  const CoreView in = device ? device_view(input, "alltoall_base") : core_view(input, "alltoall_base");
  const CoreView out = device ? device_view(output, "alltoall_base") : core_view(output, "alltoall_base");
  if (input.scalar_type() != output.scalar_type())
    refuse("alltoall_base", "input and output must have one dtype");
  // Splits count rows of dimension 0; the core counts elements.
  auto counts = [this](const at::Tensor& t, const CoreView& view,
                       const std::vector<int64_t>& splits, const char* which) {
    std::vector<std::size_t> c(static_cast<std::size_t>(size_));
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const std::size_t per_row = rows == 0 ? 0 : view.count / static_cast<std::size_t>(rows);
    if (splits.empty()) {
      if (rows % size_ != 0)
        refuse("alltoall_base", std::string(which) + " tensor's first dimension (" +
                                    std::to_string(rows) + ") does not divide by the world size (" +
                                    std::to_string(size_) + "); pass split sizes");
      std::fill(c.begin(), c.end(), static_cast<std::size_t>(rows / size_) * per_row);
      return c;
    }
    if (splits.size() != static_cast<std::size_t>(size_))
      refuse("alltoall_base", std::string(which) + " split sizes must have one entry per rank");
    int64_t total = 0;
    for (std::size_t r = 0; r < c.size(); ++r) {
      if (splits[r] < 0) refuse("alltoall_base", "split sizes must not be negative");
      total += splits[r];
      c[r] = static_cast<std::size_t>(splits[r]) * per_row;
    }
    if (total != rows)
      refuse("alltoall_base", std::string(which) + " split sizes add up to " +
                                  std::to_string(total) + ", not the tensor's first dimension (" +
                                  std::to_string(rows) + ")");
    return c;
  };
  const auto send = counts(input, in, input_split_sizes, "input");
  const auto recv = counts(output, out, output_split_sizes, "output");
  at::Tensor keep_in = input;
  if (device)
    return enqueue_device(c10d::OpType::ALLTOALL_BASE, {output}, {output, input},
                          [in, out, send, recv, keep_in](DeviceCollectives& d) {
                            d.alltoallv(in.count ? in.data : nothing(), send,
                                        out.count ? out.data : nothing(), recv, in.type);
                          });
  return enqueue(queue_, c10d::OpType::ALLTOALL_BASE, {output},
                 [this, in, out, send, recv, keep_in] {
                   communicator_->alltoallv(in.count ? in.data : nothing(), send,
                                            out.count ? out.data : nothing(), recv, in.type);
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::alltoall(std::vector<at::Tensor>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllToAllOptions&) {
  if (inputs.size() != static_cast<std::size_t>(size_) ||
      outputs.size() != static_cast<std::size_t>(size_))
    refuse("alltoall", "takes one input and one output tensor per rank (" +
                           std::to_string(size_) + ")");
  std::vector<at::Tensor> used = inputs;
  used.insert(used.end(), outputs.begin(), outputs.end());
  if (on_device(used, "alltoall")) {
    std::vector<std::size_t> send, recv;
    for (const auto& t : inputs) {
      send.push_back(device_view(t, "alltoall").count);
      if (t.scalar_type() != inputs.front().scalar_type())
        refuse("alltoall", "input tensors must have one dtype");
    }
    for (const auto& t : outputs) {
      recv.push_back(device_view(t, "alltoall").count);
      if (t.scalar_type() != inputs.front().scalar_type())
        refuse("alltoall", "output tensors must have the inputs' dtype");
    }
    const DataType type = device_view(inputs.front(), "alltoall").type;
    std::vector<at::Tensor> ins = inputs;
    std::vector<at::Tensor> outs = outputs;
    return enqueue_device(c10d::OpType::ALLTOALL, outputs, used,
                          [ins, outs, send, recv, type](DeviceCollectives& d) mutable {
                            int64_t total = 0;
                            for (const auto& t : outs) total += t.numel();
                            int64_t sent = 0;
                            for (const auto& t : ins) sent += t.numel();
                            if (total == 0 && sent == 0) return;
                            const at::Tensor flat_in = sent ? device_flat(ins) : at::Tensor();
                            const void* from = sent ? flat_in.data_ptr() : nothing();
                            if (void* base = back_to_back(outs); base && total > 0) {
                              d.alltoallv(from, send, base, recv, type);
                              return;
                            }
                            at::Tensor flat_out = at::empty({total}, outs.front().options());
                            d.alltoallv(from, send, total ? flat_out.data_ptr() : nothing(), recv, type);
                            unflatten(flat_out, outs);
                          });
  }
  check_list(inputs, "alltoall");
  for (const auto& t : outputs) {
    core_view(t, "alltoall");
    if (t.scalar_type() != inputs.front().scalar_type())
      refuse("alltoall", "output tensors must have the inputs' dtype");
  }
  const auto send = counts_of(inputs);
  const auto recv = counts_of(outputs);
  std::vector<at::Tensor> ins = inputs;
  std::vector<at::Tensor> outs = outputs;
  const std::size_t recv_total = std::accumulate(recv.begin(), recv.end(), std::size_t{0});
  return enqueue(queue_, c10d::OpType::ALLTOALL, outputs,
                 [this, ins, send, recv, outs, recv_total]() mutable {
                   at::Tensor flat_in = flat_view(ins, *scratch_, 0);
                   int64_t out_elements = 0;
                   for (const auto& t : outs) out_elements += t.numel();
                   at::Tensor flat_out = scratch_->take(1, out_elements, flat_in.options());
                   const CoreView in = core_view(flat_in, "alltoall");
                   communicator_->alltoallv(in.count ? in.data : nothing(), send,
                                            recv_total ? flat_out.data_ptr() : nothing(), recv,
                                            in.type);
                   unflatten(flat_out, outs);
                 });
}

#if RISEML_TORCH_MAJOR >= 2
c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  const char* op = "allgather_into_tensor_coalesced";
  if (inputs.empty() || inputs.size() != outputs.size())
    refuse(op, "takes as many output tensors as input tensors, at least one");
  std::vector<at::Tensor> used = inputs;
  used.insert(used.end(), outputs.begin(), outputs.end());
  const bool device = on_device(used, op);
  if (device) {
    for (const auto& t : used) device_view(t, op);
  } else {
    check_list(inputs, op);
    check_list(outputs, op);
  }
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (outputs[i].scalar_type() != inputs[i].scalar_type() ||
        outputs[i].numel() != inputs[i].numel() * size_)
      refuse(op, "output " + std::to_string(i) + " must hold world size (" +
                     std::to_string(size_) + ") times input " + std::to_string(i) +
                     "'s elements, of its dtype");
  std::vector<at::Tensor> ins = inputs;
  std::vector<at::Tensor> outs = outputs;
  if (device) {
    const int size = size_;
    return enqueue_device(c10d::OpType::COALESCED, outputs, used,
                          [ins, outs, size](DeviceCollectives& d) mutable {
                            // As the host form below: one allgather of the packed inputs
                            // (as bytes: any dtype, mixed ones too), each output its slices.
                            std::vector<at::Tensor> bytes;
                            for (const auto& t : ins) bytes.push_back(as_bytes(t));
                            const at::Tensor flat = device_flat(bytes);
                            const int64_t n = flat.numel();
                            if (n == 0) return;
                            at::Tensor all = at::empty({size, n}, flat.options());
                            d.allgatherv(flat.data_ptr(), all.data_ptr(),
                                         equal_counts(size, static_cast<std::size_t>(n)),
                                         DataType::uint8);
                            int64_t offset = 0;
                            for (std::size_t i = 0; i < outs.size(); ++i) {
                              const int64_t k = bytes[i].numel();
                              as_bytes(outs[i]).view({size, k}).copy_(all.narrow(1, offset, k));
                              offset += k;
                            }
                          });
  }
  return enqueue(queue_, c10d::OpType::COALESCED, outputs, [this, ins, outs]() mutable {
    // One allgather of the packed inputs; rank r's piece of every input lies at r's block of
    // the result, from which each output takes its slices.
    at::Tensor flat_in = flat_view(ins, *scratch_, 0);
    at::Tensor all = scratch_->take(1, size_ * flat_in.numel(), flat_in.options());
    const CoreView v = core_view(flat_in, "allgather_into_tensor_coalesced");
    communicator_->allgather(v.data, all.data_ptr(), v.count, v.type);
    at::Tensor blocks = all.view({size_, flat_in.numel()});
    int64_t offset = 0;
    for (std::size_t i = 0; i < ins.size(); ++i) {
      const int64_t n = ins[i].numel();
      outs[i].view({size_, n}).copy_(blocks.narrow(1, offset, n));
      offset += n;
    }
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const char* op = "reduce_scatter_tensor_coalesced";
  if (inputs.empty() || inputs.size() != outputs.size())
    refuse(op, "takes as many output tensors as input tensors, at least one");
  std::vector<at::Tensor> used = inputs;
  used.insert(used.end(), outputs.begin(), outputs.end());
  const bool device = on_device(used, op);
  if (device) {
    for (const auto& t : used) {
      device_view(t, op);
      if (t.scalar_type() != inputs.front().scalar_type())
        refuse(op, "all tensors of one call must have one dtype");
    }
  } else {
    check_list(inputs, op);
    check_list(outputs, op);
  }
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (outputs[i].scalar_type() != inputs[i].scalar_type() ||
        inputs[i].numel() != outputs[i].numel() * size_)
      refuse(op, "input " + std::to_string(i) + " must hold world size (" +
                     std::to_string(size_) + ") times output " + std::to_string(i) +
                     "'s elements, of its dtype");
  std::vector<at::Tensor> ins = inputs;
  std::vector<at::Tensor> outs = outputs;
  if (device) {
    const ReduceOp reduce = device_reduction(opts.reduceOp, outputs.front(), op);
    const int size = size_;
    return enqueue_device(c10d::OpType::COALESCED, outputs, used,
                          [ins, outs, reduce, size](DeviceCollectives& d) mutable {
                            // Rank-major packing as the host form below.
                            int64_t per_rank = 0;
                            for (const auto& t : outs) per_rank += t.numel();
                            if (per_rank == 0) return;
                            at::Tensor packed = at::empty({size, per_rank}, ins.front().options());
                            int64_t offset = 0;
                            for (std::size_t i = 0; i < ins.size(); ++i) {
                              const int64_t n = outs[i].numel();
                              packed.narrow(1, offset, n).copy_(ins[i].reshape({size, n}));
                              offset += n;
                            }
                            at::Tensor mine = at::empty({per_rank}, packed.options());
                            const CoreView v = device_view(mine, "reduce_scatter_tensor_coalesced");
                            d.reduce_scatter(packed.data_ptr(), v.data, v.count, v.type, reduce);
                            unflatten(mine, outs);
                          });
  }
  const Reduction r = reduction_for(opts.reduceOp, outputs.front(), op);
  return enqueue(queue_, c10d::OpType::COALESCED, outputs, [this, ins, outs, r]() mutable {
    // Rank-major packing: rank r's block holds r's chunk of every input, so one
    // reduce-scatter gives each rank its chunk of every input, back to back.
    int64_t per_rank = 0;
    for (const auto& t : outs) per_rank += t.numel();
    at::Tensor packed = scratch_->take(0, size_ * per_rank, ins.front().options());
    at::Tensor blocks = packed.view({size_, per_rank});
    int64_t offset = 0;
    for (std::size_t i = 0; i < ins.size(); ++i) {
      const int64_t n = outs[i].numel();
      blocks.narrow(1, offset, n).copy_(ins[i].reshape({size_, n}));
      offset += n;
    }
    at::Tensor mine = scratch_->take(1, per_rank, ins.front().options());
    const CoreView in = core_view(packed, "reduce_scatter_tensor_coalesced");
    const CoreView out = core_view(mine, "reduce_scatter_tensor_coalesced");
    if (r.bitwise == Bitwise::none) {
      communicator_->reduce_scatter(in.data, out.data, out.count, in.type, r.op);
    } else {
      at::Tensor all = at::empty({size_, packed.numel()}, packed.options());
      communicator_->allgather(in.data, all.data_ptr(), in.count, in.type);
      std::vector<at::Tensor> parts;
      for (const auto& row : all.unbind(0)) parts.push_back(row.narrow(0, rank_ * per_rank, per_rank));
      fold_bitwise(r.bitwise, mine, parts);
    }
    unflatten(mine, outs);
  });
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupRiseml::split(
    const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
    const c10::intrusive_ptr<Options>& opts) {
  const auto me = std::find(ranks.begin(), ranks.end(), rank_);
  if (me == ranks.end()) return nullptr;  // this rank is in none of the new groups
  for (int r : ranks) check_root(r, size_, "split_group");
  const auto timeout = opts != nullptr ? opts->timeout : timeout_;
  // A clone: the new group's setup blocks on the store, which must not hold up the parent's.
  return c10::make_intrusive<ProcessGroupRiseml>(
      store->clone(), static_cast<int>(me - ranks.begin()), static_cast<int>(ranks.size()),
      timeout, options_);
}
#endif

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::barrier(const c10d::BarrierOptions&) {
  return enqueue(queue_, c10d::OpType::BARRIER, {}, [this] { communicator_->barrier(); });
}

void ProcessGroupRiseml::monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) {
  const std::chrono::milliseconds timeout =
      opts.timeout == c10d::kUnsetTimeout ? timeout_ : opts.timeout;
  std::vector<int> missing;
  try {
    missing = rendezvous_->monitored_arrival(++monitored_barriers_, timeout, wait_all_ranks);
  } catch (const RendezvousError& e) {
    throw std::runtime_error(e.what());
  }
  if (missing.empty()) return;
  std::string ranks;
  for (int r : missing) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  throw std::runtime_error((missing.size() == 1 ? "Rank " : "Ranks ") + ranks +
                           " failed to pass monitoredBarrier in " +
                           std::to_string(timeout.count()) + " ms");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::send(std::vector<at::Tensor>& tensors,
                                                        int dst_rank, int tag) {
  expect_one(tensors, "send");
  check_root(dst_rank, size_, "send");
  if (on_device(tensors, "send")) return device_p2p(tensors, dst_rank, /*is_send=*/true);
  const CoreView v = core_view(tensors[0], "send");
  // Written now: the caller may reuse its tensor once send() returns, and a send never waits
  // behind this rank's pending receives.
  auto work = c10::make_intrusive<RisemlWork>(rank_, c10d::OpType::SEND, tensors,
                                              std::weak_ptr<OpQueue>());  // done before it returns
  try {
    mailbox_->post("p2p/", dst_rank, tag, v.data, v.count * element_size(v.type));
    work->succeed();
  } catch (const std::exception& e) {
    work->fail(std::make_exception_ptr(std::runtime_error(
        "riseml send to rank " + std::to_string(dst_rank) + " failed: " + e.what())));
  }
  return track(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::recv(std::vector<at::Tensor>& tensors,
                                                        int src_rank, int tag) {
  expect_one(tensors, "recv");
  check_root(src_rank, size_, "recv");
  if (on_device(tensors, "recv")) return device_p2p(tensors, src_rank, /*is_send=*/false);
  return receive(tensors, src_rank, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::recvAnysource(
    std::vector<at::Tensor>& tensors, int tag) {
  // NCCL matches a receive with one sender's sends; nothing on the device takes "any rank".
  host_only("recvAnysource", tensors);
  expect_one(tensors, "recvAnysource");
  return receive(tensors, -1, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::receive(std::vector<at::Tensor>& tensors,
                                                           int src_rank, int tag) {
  const CoreView v = core_view(tensors[0], "recv");
  const std::size_t bytes = v.count * element_size(v.type);
  auto work = c10::make_intrusive<RisemlWork>(rank_, src_rank < 0 ? c10d::OpType::RECVANYSOURCE
                                                                  : c10d::OpType::RECV,
                                              tensors, p2p_queue_);
  // The messages are taken on the receiving thread in call order, so that receives from one
  // rank and from any rank consume one sequence.
  p2p_queue_->push([this, work, v, bytes, src_rank, tag] {
    try {
      work->succeed_from(mailbox_->take("recv", "p2p/", src_rank, tag, v.data, bytes));
    } catch (...) {
      work->fail(std::current_exception());
    }
  });
  return track(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::device_p2p(std::vector<at::Tensor>& tensors,
                                                              int peer, bool is_send) {
  const char* op = is_send ? "send" : "recv";
  const c10d::OpType type = is_send ? c10d::OpType::SEND : c10d::OpType::RECV;
  device_bytes(tensors[0], op);  // refuses what the device path cannot take, at the call
  DevicePath& path = device_path(tensors[0].device(), type);
  auto work = c10::make_intrusive<RisemlWork>(rank_, type, tensors, queue_, path.devices());
  HeldTransfer held{tensors[0], peer, is_send, work};
  {
    std::lock_guard lock(coalescing_mutex_);
    if (coalescing_) {
      held_transfers_.push_back(std::move(held));
      coalesced_works_.push_back(work);
      return work;
    }
  }
  std::vector<HeldTransfer> alone;
  alone.push_back(std::move(held));
  post_device_batch(std::move(alone));
  return work;
}

void ProcessGroupRiseml::post_device_batch(std::vector<HeldTransfer> batch) {
  if (batch.empty()) return;
  std::vector<at::Tensor> used;
  for (const auto& h : batch) used.push_back(h.tensor);
#if RISEML_TORCH_MAJOR >= 2
  const c10d::OpType many = c10d::OpType::COALESCED;
#else
  const c10d::OpType many = c10d::OpType::UNKNOWN;  // torch 1.13: no coalescing blocks
#endif
  const c10d::OpType type = batch.size() > 1      ? many
                            : batch.front().is_send ? c10d::OpType::SEND
                                                    : c10d::OpType::RECV;
  std::vector<c10::intrusive_ptr<RisemlWork>> works;
  for (const auto& h : batch) works.push_back(h.work);
  // Each op found the path and checked its device at its call.
  DevicePath& path = device_path(used.front().device(), type);
  post_device(path, type, used, std::move(works), [batch = std::move(batch)](DeviceCollectives& d) {
    std::vector<PeerSend> sends;
    std::vector<PeerReceive> receives;
    for (const auto& h : batch) {
      const ByteView v = device_bytes(h.tensor, h.is_send ? "send" : "recv");
      if (h.is_send)
        sends.push_back({v.data, v.bytes, h.peer});
      else
        receives.push_back({v.data, v.bytes, h.peer});
    }
    d.exchange(sends, receives);
  });
}

#if RISEML_TORCH_MAJOR >= 2
void ProcessGroupRiseml::startCoalescing() {
  std::vector<HeldTransfer> abandoned;
  {
    std::lock_guard lock(coalescing_mutex_);
    // A block still open was left by an exception (torch's _coalescing_manager does not end it
    // then; abort_process_group starts one regardless): its held transfers are posted now, so
    // that their works finish, and its works are no longer the new block's.
    abandoned.swap(held_transfers_);
    coalesced_works_.clear();
    coalescing_ = true;
  }
  post_device_batch(std::move(abandoned));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRiseml::endCoalescing() {
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  std::vector<HeldTransfer> held;
  {
    std::lock_guard lock(coalescing_mutex_);
    if (!coalescing_)
      refuse("endCoalescing", "no coalescing block is open on this process group "
                              "(startCoalescing first)");
    coalescing_ = false;
    works.swap(coalesced_works_);
    held.swap(held_transfers_);
  }
  post_device_batch(std::move(held));
  return CoalescedWork::create(rank_, std::move(works));
}
#endif

}  // namespace riseml::torch_distributed
