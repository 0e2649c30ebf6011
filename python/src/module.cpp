// _riseml: the engine for Python. One engine per process, started by init() from PMIx (srun
// --mpi=pmix, mpirun, riseml-launch, or a lone process). Buffers are numpy arrays (or any
// C-contiguous buffer), reduced in place where the caller passes the same array as input and
// output; the arrays are kept alive until synchronize(). Waiting releases the GIL. Engine errors
// raise riseml.RisemlError (a RuntimeError) with the engine's message.
#include <riseml/cuda/status.hpp>
#include <riseml/engine/engine.hpp>
#include <riseml/pmix/session.hpp>
#include <riseml/pmix/session_rendezvous.hpp>
#include <riseml/subset_rendezvous.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace py = pybind11;
using namespace riseml;

namespace {

// A process set (Horovod's name): a sub-communicator of some ranks with an engine of its own,
// so that disjoint sets negotiate and progress independently. Set 0 is the whole job.
struct ProcessSet {
  std::vector<int> ranks;
  std::unique_ptr<SubsetRendezvous> rendezvous;
  std::unique_ptr<engine::Engine> engine;  // null on the ranks outside the set
};

struct Runtime {
  std::shared_ptr<pmix::Session> session;
  std::unique_ptr<pmix::SessionRendezvous> rendezvous;
  std::unique_ptr<engine::Engine> engine;
  pmix::JobFacts facts;
  std::map<int, ProcessSet> sets;  // beyond set 0
  int next_set_id = 1;
  // init() after shutdown() (Horovod allows it) reuses the bootstrap session, which PMIx cannot
  // start twice, and keys the new communicators apart by generation.
  int generation = 0;
  std::string prefix() const {
    return generation == 0 ? std::string("riseml") : "riseml.g" + std::to_string(generation);
  }
};

// What synchronize() returns besides waiting.
enum class Result { none, gathered, gathered_list, alltoall };

struct Pending {
  engine::Handle handle;
  py::object keep_alive;  // the arrays the engine reads or writes
  Result result = Result::none;
  py::dtype result_dtype;
  bool on_device = false;  // GPU tensors: the caller (riseml.torch) keeps them alive
};

std::unique_ptr<Runtime> g_runtime;
std::map<std::int64_t, Pending> g_pending;
std::int64_t g_next_handle = 1;

Runtime& runtime() {
  if (!g_runtime || !g_runtime->engine)
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml has not been initialized; call riseml.init() first");
  return *g_runtime;
}

DataType dtype_of(const py::array& a, const std::string& override_name) {
  if (!override_name.empty()) {
    auto t = parse_data_type(override_name);
    if (!t) throw py::type_error("riseml: unknown data type '" + override_name + "'");
    return *t;
  }
  const char kind = a.dtype().kind();
  const auto size = a.dtype().itemsize();
  if (kind == 'f' && size == 4) return DataType::float32;
  if (kind == 'f' && size == 8) return DataType::float64;
  if (kind == 'f' && size == 2) return DataType::float16;
  if (kind == 'i' && size == 4) return DataType::int32;
  if (kind == 'i' && size == 8) return DataType::int64;
  if (kind == 'u' && size == 1) return DataType::uint8;
  if (kind == 'i' && size == 1) return DataType::int8;
  if (kind == 'i' && size == 2) return DataType::int16;
  if (kind == 'b' && size == 1) return DataType::boolean;
  throw py::type_error("riseml: unsupported dtype " + std::string(py::str(a.dtype())) +
                       " (float16/32/64, int8/16/32/64, uint8, bool; bfloat16 through torch)");
}

void check_contiguous(const py::array& a, const char* what) {
  if (!(a.flags() & py::array::c_style))
    throw py::value_error(std::string("riseml: the ") + what + " array must be C-contiguous");
}

std::vector<std::int64_t> shape_of(const py::array& a) {
  std::vector<std::int64_t> s;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s.push_back(static_cast<std::int64_t>(a.shape(i)));
  return s;
}

std::int64_t remember(engine::Handle h, py::object keep, Result result = Result::none,
                      py::dtype dt = py::dtype("uint8")) {
  const std::int64_t id = g_next_handle++;
  g_pending.emplace(id, Pending{std::move(h), std::move(keep), result, std::move(dt)});
  return id;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

// The engine of process set `id` on this rank.
engine::Engine& engine_for(int id) {
  Runtime& rt = runtime();
  if (id == 0) return *rt.engine;
  auto it = rt.sets.find(id);
  if (it == rt.sets.end())
    throw py::value_error("riseml: process set " + std::to_string(id) +
                          " is not registered (removed, or never added); add it with "
                          "add_process_set() on every rank");
  if (!it->second.engine)
    throw py::value_error("riseml: rank " + std::to_string(rt.facts.rank) +
                          " is not in process set " + std::to_string(id) + " (ranks " +
                          rank_list(it->second.ranks) + "); only its members may use it");
  return *it->second.engine;
}

engine::TensorArg arg(const py::array& in, py::array& out) {
  check_contiguous(in, "input");
  check_contiguous(out, "output");
  if (!out.writeable()) throw py::value_error("riseml: the output array is read-only");
  if (in.nbytes() != out.nbytes() || !in.dtype().is(out.dtype()))
    throw py::value_error("riseml: input and output arrays differ in size or dtype");
  return {in.data(), out.mutable_data(), shape_of(in)};
}

// Horovod's op=Adasum: one past the core's reduce operations.
constexpr int kAdasum = static_cast<int>(ReduceOp::product) + 1;

ReduceOp op_of(int op) {
  if (op < 0 || op > kAdasum)
    throw py::value_error("riseml: unknown reduce op " + std::to_string(op));
  return op == kAdasum ? ReduceOp::sum : static_cast<ReduceOp>(op);
}

std::int64_t allreduce_async(py::array in, py::array out, const std::string& name, int op,
                             double prescale, double postscale, const std::string& dtype,
                             int process_set) {
  engine::Request r;
  r.kind = engine::OpKind::allreduce;
  r.name = name;
  r.dtype = dtype_of(in, dtype);
  r.op = op_of(op);
  r.adasum = op == kAdasum;
  r.prescale = prescale;
  r.postscale = postscale;
  r.tensors.push_back(arg(in, out));
  auto h = engine_for(process_set).enqueue(std::move(r));
  return remember(std::move(h), py::make_tuple(in, out));
}

std::int64_t grouped_allreduce_async(std::vector<py::array> ins, std::vector<py::array> outs,
                                     const std::string& name, int op, double prescale,
                                     double postscale, const std::string& dtype,
                                     int process_set) {
  if (ins.empty() || ins.size() != outs.size())
    throw py::value_error("riseml: grouped_allreduce needs equally many (>0) inputs and outputs");
  engine::Request r;
  r.kind = engine::OpKind::allreduce;
  r.name = name;
  r.dtype = dtype_of(ins[0], dtype);
  r.op = op_of(op);
  r.adasum = op == kAdasum;
  r.prescale = prescale;
  r.postscale = postscale;
  for (std::size_t i = 0; i < ins.size(); ++i) {
    if (dtype_of(ins[i], dtype) != r.dtype)
      throw py::value_error("riseml: grouped_allreduce needs tensors of one dtype");
    r.tensors.push_back(arg(ins[i], outs[i]));
  }
  auto h = engine_for(process_set).enqueue(std::move(r));
  return remember(std::move(h), py::make_tuple(py::cast(ins), py::cast(outs)));
}

// The outputs hold this rank's rows (reducescatter_rows); the caller allocated them.
std::int64_t reducescatter_async(std::vector<py::array> ins, std::vector<py::array> outs,
                                 const std::string& name, int op, double prescale,
                                 double postscale, const std::string& dtype, int process_set) {
  if (ins.empty() || ins.size() != outs.size())
    throw py::value_error("riseml: reducescatter needs equally many (>0) inputs and outputs");
  if (op == kAdasum)
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml: reducescatter does not support op=Adasum (Horovod neither)");
  engine::Request r;
  r.kind = engine::OpKind::reducescatter;
  r.name = name;
  r.dtype = dtype_of(ins[0], dtype);
  r.op = op_of(op);
  r.prescale = prescale;
  r.postscale = postscale;
  for (std::size_t i = 0; i < ins.size(); ++i) {
    check_contiguous(ins[i], "input");
    check_contiguous(outs[i], "output");
    if (dtype_of(ins[i], dtype) != r.dtype || !ins[i].dtype().is(outs[i].dtype()))
      throw py::value_error("riseml: reducescatter needs tensors of one dtype");
    if (ins[i].ndim() == 0) throw py::value_error("riseml: reducescatter needs at least one dimension");
    r.tensors.push_back({ins[i].data(), outs[i].mutable_data(), shape_of(ins[i])});
  }
  auto h = engine_for(process_set).enqueue(std::move(r));
  return remember(std::move(h), py::make_tuple(py::cast(ins), py::cast(outs)));
}

std::int64_t alltoall_async(py::array in, std::vector<std::int64_t> splits, const std::string& name,
                            const std::string& dtype, int process_set) {
  check_contiguous(in, "input");
  if (in.ndim() == 0) throw py::value_error("riseml: alltoall needs at least one dimension");
  engine::Request r;
  r.kind = engine::OpKind::alltoall;
  r.name = name;
  r.dtype = dtype_of(in, dtype);
  r.splits = std::move(splits);
  r.tensors.push_back({in.data(), nullptr, shape_of(in)});
  auto h = engine_for(process_set).enqueue(std::move(r));
  return remember(std::move(h), in, Result::alltoall, in.dtype());
}

std::int64_t grouped_allgather_async(std::vector<py::array> ins, const std::string& name,
                                     const std::string& dtype, int process_set) {
  if (ins.empty()) throw py::value_error("riseml: grouped_allgather needs at least one tensor");
  engine::Request r;
  r.kind = engine::OpKind::allgather;
  r.name = name;
  r.dtype = dtype_of(ins[0], dtype);
  for (const py::array& in : ins) {
    check_contiguous(in, "input");
    if (dtype_of(in, dtype) != r.dtype)
      throw py::value_error("riseml: grouped_allgather needs tensors of one dtype");
    if (in.ndim() == 0) throw py::value_error("riseml: allgather needs at least one dimension");
    r.tensors.push_back({in.data(), nullptr, shape_of(in)});
  }
  auto h = engine_for(process_set).enqueue(std::move(r));
  return remember(std::move(h), py::cast(ins), Result::gathered_list, ins[0].dtype());
}

std::int64_t broadcast_async(py::array in, py::array out, int root, const std::string& name,
                             const std::string& dtype, int process_set) {
  engine::Request r;
  r.kind = engine::OpKind::broadcast;
  r.name = name;
  r.dtype = dtype_of(in, dtype);
  r.root = root;
  r.tensors.push_back(arg(in, out));
  auto h = engine_for(process_set).enqueue(std::move(r));
  return remember(std::move(h), py::make_tuple(in, out));
}

std::int64_t allgather_async(py::array in, const std::string& name, const std::string& dtype,
                             int process_set) {
  check_contiguous(in, "input");
  engine::Request r;
  r.kind = engine::OpKind::allgather;
  r.name = name;
  r.dtype = dtype_of(in, dtype);
  if (in.ndim() == 0) throw py::value_error("riseml: allgather needs at least one dimension");
  r.tensors.push_back({in.data(), nullptr, shape_of(in)});
  auto h = engine_for(process_set).enqueue(std::move(r));
  return remember(std::move(h), in, Result::gathered, in.dtype());
}

// GPU tensors come as raw device pointers (torch's data_ptr()), with the CUDA device and the
// stream the framework wrote them on (torch.cuda.current_stream().cuda_stream).
struct DeviceArgs {
  int device = 0;
  std::uintptr_t stream = 0;
};

DataType dtype_named(const std::string& name) {
  auto t = parse_data_type(name);
  if (!t) throw py::type_error("riseml: unsupported data type '" + name + "'");
  return *t;
}

engine::TensorArg device_arg(std::uintptr_t in, std::uintptr_t out,
                             const std::vector<std::int64_t>& shape, int device) {
  return {reinterpret_cast<const void*>(in), reinterpret_cast<void*>(out), shape, device};
}

std::int64_t remember_device(engine::Handle h, bool allgather = false) {
  const std::int64_t id = g_next_handle++;
  Pending p{std::move(h), py::none(), allgather ? Result::gathered : Result::none,
            py::dtype("uint8"), true};
  g_pending.emplace(id, std::move(p));
  return id;
}

std::int64_t device_allreduce_async(std::vector<std::uintptr_t> ins, std::vector<std::uintptr_t> outs,
                                    std::vector<std::vector<std::int64_t>> shapes,
                                    const std::string& dtype, int device, std::uintptr_t stream,
                                    const std::string& name, int op, double prescale,
                                    double postscale, int process_set) {
  if (ins.empty() || ins.size() != outs.size() || ins.size() != shapes.size())
    throw py::value_error("riseml: device allreduce needs equally many (>0) inputs, outputs, shapes");
  engine::Request r;
  r.kind = engine::OpKind::allreduce;
  r.name = name;
  r.dtype = dtype_named(dtype);
  r.op = op_of(op);
  r.adasum = op == kAdasum;
  r.prescale = prescale;
  r.postscale = postscale;
  r.stream = reinterpret_cast<void*>(stream);
  for (std::size_t i = 0; i < ins.size(); ++i)
    r.tensors.push_back(device_arg(ins[i], outs[i], shapes[i], device));
  return remember_device(engine_for(process_set).enqueue(std::move(r)));
}

std::int64_t device_broadcast_async(std::uintptr_t in, std::uintptr_t out,
                                    std::vector<std::int64_t> shape, const std::string& dtype,
                                    int device, std::uintptr_t stream, int root,
                                    const std::string& name, int process_set) {
  engine::Request r;
  r.kind = engine::OpKind::broadcast;
  r.name = name;
  r.dtype = dtype_named(dtype);
  r.root = root;
  r.stream = reinterpret_cast<void*>(stream);
  r.tensors.push_back(device_arg(in, out, shape, device));
  return remember_device(engine_for(process_set).enqueue(std::move(r)));
}

std::int64_t device_allgather_async(std::uintptr_t in, std::vector<std::int64_t> shape,
                                    const std::string& dtype, int device, std::uintptr_t stream,
                                    const std::string& name, int process_set) {
  if (shape.empty()) throw py::value_error("riseml: allgather needs at least one dimension");
  engine::Request r;
  r.kind = engine::OpKind::allgather;
  r.name = name;
  r.dtype = dtype_named(dtype);
  r.stream = reinterpret_cast<void*>(stream);
  r.tensors.push_back(device_arg(in, 0, shape, device));
  return remember_device(engine_for(process_set).enqueue(std::move(r)), true);
}

// Device allgather results wait here between synchronize() (which gives the shape, so the
// caller can allocate) and copy_device_result() (which fills the caller's tensor).
std::map<std::int64_t, engine::Handle> g_device_results;

// dst == 0: drop the result (the caller could not allocate its tensor).
void copy_device_result(std::int64_t id, std::uintptr_t dst, std::uintptr_t stream) {
  auto it = g_device_results.find(id);
  if (it == g_device_results.end())
    throw py::value_error("riseml: no device result for handle " + std::to_string(id));
  engine::Handle h = it->second;
  g_device_results.erase(it);
  if (dst == 0) return;
  py::gil_scoped_release release;
  h.copy_allgather_output(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(stream));
}

Pending take(std::int64_t id) {
  auto it = g_pending.find(id);
  if (it == g_pending.end())
    throw py::value_error("riseml: unknown or already synchronized handle " + std::to_string(id));
  Pending p = std::move(it->second);
  g_pending.erase(it);
  return p;
}

py::object synchronize(std::int64_t id) {
  auto it = g_pending.find(id);
  if (it == g_pending.end())
    throw py::value_error("riseml: unknown or already synchronized handle " + std::to_string(id));
  engine::Handle h = it->second.handle;
  try {
    py::gil_scoped_release release;
    h.wait();
  } catch (...) {
    take(id);
    throw;
  }
  Pending p = take(id);
  if (p.result == Result::none) return py::none();
  if (p.on_device) {  // the shape; the bytes follow with copy_device_result(id, ptr)
    g_device_results.emplace(id, h);
    return py::cast(h.output_shape());
  }
  auto array = [&](std::size_t i) {
    const auto& bytes = h.output(i);
    std::vector<py::ssize_t> shape(h.output_shape(i).begin(), h.output_shape(i).end());
    py::array out(p.result_dtype, shape);
    if (!bytes.empty()) std::memcpy(out.mutable_data(), bytes.data(), bytes.size());
    return out;
  };
  switch (p.result) {
    case Result::gathered: return array(0);
    case Result::alltoall: return py::make_tuple(array(0), py::cast(h.received_splits()));
    case Result::gathered_list: {
      py::list all;
      for (std::size_t i = 0; i < h.output_count(); ++i) all.append(array(i));
      return all;
    }
    case Result::none: break;
  }
  return py::none();
}

// Collective on every rank of the job (Horovod's add_process_set): the ranks must agree, which
// is checked with an allgather on the job's engine before any setup.
int add_process_set(std::vector<int> ranks) {
  Runtime& rt = runtime();
  std::sort(ranks.begin(), ranks.end());
  const int size = rt.facts.size;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size)
      throw py::value_error("riseml: process set rank " + std::to_string(ranks[i]) +
                            " is not in the job (ranks 0.." + std::to_string(size - 1) + ")");
    if (i && ranks[i] == ranks[i - 1])
      throw py::value_error("riseml: process set rank " + std::to_string(ranks[i]) +
                            " given twice");
  }
  if (ranks.empty()) throw py::value_error("riseml: a process set needs at least one rank");
  const int id = rt.next_set_id;
  {
    // Every rank's list, padded to the job size with -1.
    std::vector<std::int64_t> mine(static_cast<std::size_t>(size), -1);
    for (std::size_t i = 0; i < ranks.size(); ++i) mine[i] = ranks[i];
    engine::Handle h = rt.engine->allgather("riseml.process_set.add." + std::to_string(id),
                                            mine.data(), {1, size}, DataType::int64);
    {
      py::gil_scoped_release release;
      h.wait();
    }
    const auto& all = h.allgather_output();
    for (int r = 0; r < size; ++r) {
      if (std::memcmp(all.data() + static_cast<std::size_t>(r) * mine.size() * 8, mine.data(),
                      mine.size() * 8) != 0)
        throw py::value_error("riseml: add_process_set(" + rank_list(ranks) + ") on rank " +
                              std::to_string(rt.facts.rank) + ", but rank " +
                              std::to_string(r) + " asked for other ranks; every rank must "
                              "add the same process sets in the same order");
    }
  }
  for (const auto& [other, set] : rt.sets)
    if (set.ranks == ranks)
      throw py::value_error("riseml: a process set with ranks " + rank_list(ranks) +
                            " already exists (id " + std::to_string(other) + ")");
  rt.next_set_id++;
  CommunicatorOptions options = CommunicatorOptions::from_environment();
  options.rendezvous_prefix = rt.prefix() + ".ps" + std::to_string(id);
  engine::EngineOptions engine_options = engine::EngineOptions::from_environment();
  engine_options.timeline_path.clear();  // the job's engine writes the timeline
  ProcessSet set;
  set.ranks = ranks;
  const bool member = std::binary_search(ranks.begin(), ranks.end(), rt.facts.rank);
  {
    py::gil_scoped_release release;
    if (member) {
      set.rendezvous = std::make_unique<SubsetRendezvous>(*rt.rendezvous, ranks);
      set.engine = std::make_unique<engine::Engine>(*set.rendezvous, options, engine_options);
    } else {
      Communicator::stand_by(*rt.rendezvous, options);
    }
  }
  rt.sets.emplace(id, std::move(set));
  return id;
}

// Every rank calls it (Horovod's rule); the members stop the set's engine. False: no such set.
bool remove_process_set(int id) {
  Runtime& rt = runtime();
  auto it = rt.sets.find(id);
  if (it == rt.sets.end()) return false;
  if (it->second.engine) {
    py::gil_scoped_release release;
    it->second.engine->shutdown();
  }
  rt.sets.erase(it);
  return true;
}

std::vector<int> process_set_ranks(int id) {
  Runtime& rt = runtime();
  if (id == 0) {
    std::vector<int> all(static_cast<std::size_t>(rt.facts.size));
    for (int r = 0; r < rt.facts.size; ++r) all[static_cast<std::size_t>(r)] = r;
    return all;
  }
  auto it = rt.sets.find(id);
  if (it == rt.sets.end())
    throw py::value_error("riseml: process set " + std::to_string(id) + " is not registered");
  return it->second.ranks;
}

bool poll(std::int64_t id) {
  auto it = g_pending.find(id);
  if (it == g_pending.end())
    throw py::value_error("riseml: unknown or already synchronized handle " + std::to_string(id));
  return it->second.handle.poll();
}

void init() {
  if (g_runtime && g_runtime->engine) return;
  if (!g_runtime) {
    auto rt = std::make_unique<Runtime>();
    py::gil_scoped_release release;
    rt->session = pmix::init();
    rt->facts = rt->session->facts();
    rt->rendezvous = std::make_unique<pmix::SessionRendezvous>(rt->session);
    g_runtime = std::move(rt);
  } else {
    g_runtime->generation++;
  }
  Runtime& rt = *g_runtime;
  CommunicatorOptions options = CommunicatorOptions::from_environment();
  options.rendezvous_prefix = rt.prefix();
  py::gil_scoped_release release;  // setup is collective: other Python threads may run
  rt.engine = std::make_unique<engine::Engine>(*rt.rendezvous, options,
                                               engine::EngineOptions::from_environment());
}

// Stops every engine; the bootstrap session stays for a later init().
void shutdown() {
  if (!g_runtime || !g_runtime->engine) return;
  {
    py::gil_scoped_release release;
    for (auto& [id, set] : g_runtime->sets)
      if (set.engine) set.engine->shutdown();
    g_runtime->engine->shutdown();
  }
  g_pending.clear();
  g_device_results.clear();
  g_runtime->sets.clear();
  g_runtime->next_set_id = 1;
  g_runtime->engine.reset();
}

// At exit: shutdown() and the bootstrap session too.
void finalize() {
  shutdown();
  py::gil_scoped_release release;
  g_runtime.reset();
}

}  // namespace

PYBIND11_MODULE(_riseml, m) {
  m.doc() = "riseml engine binding (use the riseml and riseml.torch packages)";
  // RisemlError is a RuntimeError (Horovod's HorovodInternalError is one); errors in what the
  // caller passed (ErrorKind::invalid_argument) are also ValueErrors, as Horovod raises them.
  static py::exception<CollectiveError> error(m, "RisemlError", PyExc_RuntimeError);
  static py::exception<CollectiveError> value_error(
      m, "RisemlValueError", py::make_tuple(error, py::handle(PyExc_ValueError)));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CollectiveError& e) {
      if (e.kind() == ErrorKind::invalid_argument)
        value_error(e.what());
      else
        error(e.what());
    } catch (const RendezvousError& e) {
      error(e.what());
    }
  });
  m.def("init", &init);
  m.def("shutdown", &shutdown);
  m.def("finalize", &finalize);
  m.def("is_initialized", [] { return g_runtime && g_runtime->engine && !g_runtime->engine->stopped(); });
  m.def("rank", [] { return runtime().facts.rank; });
  m.def("size", [] { return runtime().facts.size; });
  m.def("local_rank", [] { return runtime().facts.local_rank; });
  m.def("local_size", [] { return runtime().facts.local_size; });
  m.def("cross_rank", [] { return runtime().facts.node_id; });
  m.def("cross_size", [] { return runtime().facts.num_nodes; });
  m.def("allreduce_async", &allreduce_async, py::arg("input"), py::arg("output"), py::arg("name"),
        py::arg("op"), py::arg("prescale") = 1.0, py::arg("postscale") = 1.0,
        py::arg("dtype") = "", py::arg("process_set") = 0);
  m.def("grouped_allreduce_async", &grouped_allreduce_async, py::arg("inputs"),
        py::arg("outputs"), py::arg("name"), py::arg("op"), py::arg("prescale") = 1.0,
        py::arg("postscale") = 1.0, py::arg("dtype") = "", py::arg("process_set") = 0);
  m.def("reducescatter_async", &reducescatter_async, py::arg("inputs"), py::arg("outputs"),
        py::arg("name"), py::arg("op"), py::arg("prescale") = 1.0, py::arg("postscale") = 1.0,
        py::arg("dtype") = "", py::arg("process_set") = 0);
  m.def("reducescatter_rows", &engine::reducescatter_rows, py::arg("rows"), py::arg("size"),
        py::arg("rank"), "the rows of a reducescatter's first dimension that `rank` receives");
  m.def("alltoall_async", &alltoall_async, py::arg("input"), py::arg("splits"), py::arg("name"),
        py::arg("dtype") = "", py::arg("process_set") = 0);
  m.def("grouped_allgather_async", &grouped_allgather_async, py::arg("inputs"), py::arg("name"),
        py::arg("dtype") = "", py::arg("process_set") = 0);
  m.def("broadcast_async", &broadcast_async, py::arg("input"), py::arg("output"),
        py::arg("root"), py::arg("name"), py::arg("dtype") = "", py::arg("process_set") = 0);
  m.def("allgather_async", &allgather_async, py::arg("input"), py::arg("name"),
        py::arg("dtype") = "", py::arg("process_set") = 0);
  m.def("add_process_set", &add_process_set, py::arg("ranks"));
  m.def("remove_process_set", &remove_process_set, py::arg("id"));
  m.def("process_set_ranks", &process_set_ranks, py::arg("id"));
  m.def("process_set_ids", [] {
    std::vector<int> ids{0};
    for (const auto& [id, set] : runtime().sets) ids.push_back(id);
    return ids;
  });
  m.def("start_timeline", [](const std::string& path) { runtime().engine->start_timeline(path); },
        py::arg("path"));
  m.def("stop_timeline", [] { runtime().engine->stop_timeline(); });
  m.def("barrier", [](int process_set) {
    auto h = engine_for(process_set).barrier();
    py::gil_scoped_release release;
    h.wait();
  }, py::arg("process_set") = 0);
  m.def("join", [] {
    auto h = runtime().engine->join();
    py::gil_scoped_release release;
    return h.join_result();
  });
  m.def("synchronize", &synchronize);
  m.def("gpu_status", [] {
    return py::make_tuple(cuda::built_with_cuda(), cuda::available(), cuda::status());
  }, "(built with GPU support, a CUDA device usable now, one line saying which)");
  m.def("nccl_version", &cuda::nccl_version, "NCCL's version code; 0 in a build without NCCL");
  m.def("device_allreduce_async", &device_allreduce_async, py::arg("inputs"), py::arg("outputs"),
        py::arg("shapes"), py::arg("dtype"), py::arg("device"), py::arg("stream"),
        py::arg("name"), py::arg("op"), py::arg("prescale") = 1.0, py::arg("postscale") = 1.0,
        py::arg("process_set") = 0);
  m.def("device_broadcast_async", &device_broadcast_async, py::arg("input"), py::arg("output"),
        py::arg("shape"), py::arg("dtype"), py::arg("device"), py::arg("stream"),
        py::arg("root"), py::arg("name"), py::arg("process_set") = 0);
  m.def("device_allgather_async", &device_allgather_async, py::arg("input"), py::arg("shape"),
        py::arg("dtype"), py::arg("device"), py::arg("stream"), py::arg("name"),
        py::arg("process_set") = 0);
  m.def("copy_device_result", &copy_device_result, py::arg("handle"), py::arg("output"),
        py::arg("stream") = 0);
  m.def("poll", &poll);
  m.attr("SUM") = static_cast<int>(ReduceOp::sum);
  m.attr("AVERAGE") = static_cast<int>(ReduceOp::average);
  m.attr("MIN") = static_cast<int>(ReduceOp::min);
  m.attr("MAX") = static_cast<int>(ReduceOp::max);
  m.attr("PRODUCT") = static_cast<int>(ReduceOp::product);
  m.attr("ADASUM") = kAdasum;
}
