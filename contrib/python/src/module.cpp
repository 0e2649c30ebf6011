// _riseml: the engine for Python. One engine per process, started by init() from PMIx (srun
// --mpi=pmix, mpirun, riseml-launch, or a lone process). Buffers are numpy arrays (or any
// C-contiguous buffer), reduced in place where the caller passes the same array as input and
// output; the arrays are kept alive until synchronize(). Waiting releases the GIL. Engine errors
// raise riseml.RisemlError (a RuntimeError) with the engine's message.
#include <riseml/cuda/status.hpp>
#include <riseml/engine/engine.hpp>
#include <riseml/pmix/session.hpp>
#include <riseml/pmix/session_rendezvous.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace py = pybind11;
using namespace riseml;

namespace {

struct Runtime {
  std::shared_ptr<pmix::Session> session;
  std::unique_ptr<pmix::SessionRendezvous> rendezvous;
  std::unique_ptr<engine::Engine> engine;
  pmix::JobFacts facts;
};

struct Pending {
  engine::Handle handle;
  py::object keep_alive;  // the arrays the engine reads or writes
  bool allgather = false;
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
  throw py::type_error("riseml: unsupported dtype " + std::string(py::str(a.dtype())) +
                       " (float16/32/64, int32/64, uint8; bfloat16 through torch)");
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

std::int64_t remember(engine::Handle h, py::object keep, bool allgather = false,
                      py::dtype dt = py::dtype("uint8")) {
  const std::int64_t id = g_next_handle++;
  g_pending.emplace(id, Pending{std::move(h), std::move(keep), allgather, std::move(dt)});
  return id;
}

engine::TensorArg arg(const py::array& in, py::array& out) {
  check_contiguous(in, "input");
  check_contiguous(out, "output");
  if (!out.writeable()) throw py::value_error("riseml: the output array is read-only");
  if (in.nbytes() != out.nbytes() || !in.dtype().is(out.dtype()))
    throw py::value_error("riseml: input and output arrays differ in size or dtype");
  return {in.data(), out.mutable_data(), shape_of(in)};
}

ReduceOp op_of(int op) {
  if (op < 0 || op > static_cast<int>(ReduceOp::product))
    throw py::value_error("riseml: unknown reduce op " + std::to_string(op));
  return static_cast<ReduceOp>(op);
}

std::int64_t allreduce_async(py::array in, py::array out, const std::string& name, int op,
                             double prescale, double postscale, const std::string& dtype) {
  engine::Request r;
  r.kind = engine::OpKind::allreduce;
  r.name = name;
  r.dtype = dtype_of(in, dtype);
  r.op = op_of(op);
  r.prescale = prescale;
  r.postscale = postscale;
  r.tensors.push_back(arg(in, out));
  auto h = runtime().engine->enqueue(std::move(r));
  return remember(std::move(h), py::make_tuple(in, out));
}

std::int64_t grouped_allreduce_async(std::vector<py::array> ins, std::vector<py::array> outs,
                                     const std::string& name, int op, double prescale,
                                     double postscale, const std::string& dtype) {
  if (ins.empty() || ins.size() != outs.size())
    throw py::value_error("riseml: grouped_allreduce needs equally many (>0) inputs and outputs");
  engine::Request r;
  r.kind = engine::OpKind::allreduce;
  r.name = name;
  r.dtype = dtype_of(ins[0], dtype);
  r.op = op_of(op);
  r.prescale = prescale;
  r.postscale = postscale;
  for (std::size_t i = 0; i < ins.size(); ++i) {
    if (dtype_of(ins[i], dtype) != r.dtype)
      throw py::value_error("riseml: grouped_allreduce needs tensors of one dtype");
    r.tensors.push_back(arg(ins[i], outs[i]));
  }
  auto h = runtime().engine->enqueue(std::move(r));
  return remember(std::move(h), py::make_tuple(py::cast(ins), py::cast(outs)));
}

std::int64_t broadcast_async(py::array in, py::array out, int root, const std::string& name,
                             const std::string& dtype) {
  engine::Request r;
  r.kind = engine::OpKind::broadcast;
  r.name = name;
  r.dtype = dtype_of(in, dtype);
  r.root = root;
  r.tensors.push_back(arg(in, out));
  auto h = runtime().engine->enqueue(std::move(r));
  return remember(std::move(h), py::make_tuple(in, out));
}

std::int64_t allgather_async(py::array in, const std::string& name, const std::string& dtype) {
  check_contiguous(in, "input");
  engine::Request r;
  r.kind = engine::OpKind::allgather;
  r.name = name;
  r.dtype = dtype_of(in, dtype);
  if (in.ndim() == 0) throw py::value_error("riseml: allgather needs at least one dimension");
  r.tensors.push_back({in.data(), nullptr, shape_of(in)});
  auto h = runtime().engine->enqueue(std::move(r));
  return remember(std::move(h), in, true, in.dtype());
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
  Pending p{std::move(h), py::none(), allgather, py::dtype("uint8"), true};
  g_pending.emplace(id, std::move(p));
  return id;
}

std::int64_t device_allreduce_async(std::vector<std::uintptr_t> ins, std::vector<std::uintptr_t> outs,
                                    std::vector<std::vector<std::int64_t>> shapes,
                                    const std::string& dtype, int device, std::uintptr_t stream,
                                    const std::string& name, int op, double prescale,
                                    double postscale) {
  if (ins.empty() || ins.size() != outs.size() || ins.size() != shapes.size())
    throw py::value_error("riseml: device allreduce needs equally many (>0) inputs, outputs, shapes");
  engine::Request r;
  r.kind = engine::OpKind::allreduce;
  r.name = name;
  r.dtype = dtype_named(dtype);
  r.op = op_of(op);
  r.prescale = prescale;
  r.postscale = postscale;
  r.stream = reinterpret_cast<void*>(stream);
  for (std::size_t i = 0; i < ins.size(); ++i)
    r.tensors.push_back(device_arg(ins[i], outs[i], shapes[i], device));
  return remember_device(runtime().engine->enqueue(std::move(r)));
}

std::int64_t device_broadcast_async(std::uintptr_t in, std::uintptr_t out,
                                    std::vector<std::int64_t> shape, const std::string& dtype,
                                    int device, std::uintptr_t stream, int root,
                                    const std::string& name) {
  engine::Request r;
  r.kind = engine::OpKind::broadcast;
  r.name = name;
  r.dtype = dtype_named(dtype);
  r.root = root;
  r.stream = reinterpret_cast<void*>(stream);
  r.tensors.push_back(device_arg(in, out, shape, device));
  return remember_device(runtime().engine->enqueue(std::move(r)));
}

std::int64_t device_allgather_async(std::uintptr_t in, std::vector<std::int64_t> shape,
                                    const std::string& dtype, int device, std::uintptr_t stream,
                                    const std::string& name) {
  if (shape.empty()) throw py::value_error("riseml: allgather needs at least one dimension");
  engine::Request r;
  r.kind = engine::OpKind::allgather;
  r.name = name;
  r.dtype = dtype_named(dtype);
  r.stream = reinterpret_cast<void*>(stream);
  r.tensors.push_back(device_arg(in, 0, shape, device));
  return remember_device(runtime().engine->enqueue(std::move(r)), true);
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
  if (!p.allgather) return py::none();
  if (p.on_device) {  // the shape; the bytes follow with copy_device_result(id, ptr)
    g_device_results.emplace(id, h);
    return py::cast(h.output_shape());
  }
  const auto& bytes = h.allgather_output();
  std::vector<py::ssize_t> shape(h.output_shape().begin(), h.output_shape().end());
  py::array out(p.result_dtype, shape);
  if (!bytes.empty()) std::memcpy(out.mutable_data(), bytes.data(), bytes.size());
  return out;
}

bool poll(std::int64_t id) {
  auto it = g_pending.find(id);
  if (it == g_pending.end())
    throw py::value_error("riseml: unknown or already synchronized handle " + std::to_string(id));
  return it->second.handle.poll();
}

void init() {
  if (g_runtime && g_runtime->engine) return;
  auto rt = std::make_unique<Runtime>();
  py::gil_scoped_release release;  // setup is collective: other Python threads may run
  rt->session = pmix::init();
  rt->facts = rt->session->facts();
  rt->rendezvous = std::make_unique<pmix::SessionRendezvous>(rt->session);
  rt->engine = std::make_unique<engine::Engine>(*rt->rendezvous,
                                                CommunicatorOptions::from_environment(),
                                                engine::EngineOptions::from_environment());
  g_runtime = std::move(rt);
}

void shutdown() {
  if (!g_runtime) return;
  {
    py::gil_scoped_release release;
    if (g_runtime->engine) g_runtime->engine->shutdown();
  }
  g_pending.clear();
  g_device_results.clear();
  g_runtime.reset();
}

}  // namespace

PYBIND11_MODULE(_riseml, m) {
  m.doc() = "riseml engine binding (use the riseml and riseml.torch packages)";
  static py::exception<CollectiveError> error(m, "RisemlError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CollectiveError& e) {
      error(e.what());
    } catch (const RendezvousError& e) {
      error(e.what());
    }
  });
  m.def("init", &init);
  m.def("shutdown", &shutdown);
  m.def("is_initialized", [] { return g_runtime && g_runtime->engine && !g_runtime->engine->stopped(); });
  m.def("rank", [] { return runtime().facts.rank; });
  m.def("size", [] { return runtime().facts.size; });
  m.def("local_rank", [] { return runtime().facts.local_rank; });
  m.def("local_size", [] { return runtime().facts.local_size; });
  m.def("cross_rank", [] { return runtime().facts.node_id; });
  m.def("cross_size", [] { return runtime().facts.num_nodes; });
  m.def("allreduce_async", &allreduce_async, py::arg("input"), py::arg("output"), py::arg("name"),
        py::arg("op"), py::arg("prescale") = 1.0, py::arg("postscale") = 1.0,
        py::arg("dtype") = "");
  m.def("grouped_allreduce_async", &grouped_allreduce_async, py::arg("inputs"),
        py::arg("outputs"), py::arg("name"), py::arg("op"), py::arg("prescale") = 1.0,
        py::arg("postscale") = 1.0, py::arg("dtype") = "");
  m.def("broadcast_async", &broadcast_async, py::arg("input"), py::arg("output"),
        py::arg("root"), py::arg("name"), py::arg("dtype") = "");
  m.def("allgather_async", &allgather_async, py::arg("input"), py::arg("name"),
        py::arg("dtype") = "");
  m.def("barrier", [] {
    auto h = runtime().engine->barrier();
    py::gil_scoped_release release;
    h.wait();
  });
  m.def("join", [] {
    auto h = runtime().engine->join();
    py::gil_scoped_release release;
    return h.join_result();
  });
  m.def("synchronize", &synchronize);
  m.def("gpu_status", [] {
    return py::make_tuple(cuda::built_with_cuda(), cuda::available(), cuda::status());
  }, "(built with GPU support, a CUDA device usable now, one line saying which)");
  m.def("device_allreduce_async", &device_allreduce_async, py::arg("inputs"), py::arg("outputs"),
        py::arg("shapes"), py::arg("dtype"), py::arg("device"), py::arg("stream"),
        py::arg("name"), py::arg("op"), py::arg("prescale") = 1.0, py::arg("postscale") = 1.0);
  m.def("device_broadcast_async", &device_broadcast_async, py::arg("input"), py::arg("output"),
        py::arg("shape"), py::arg("dtype"), py::arg("device"), py::arg("stream"),
        py::arg("root"), py::arg("name"));
  m.def("device_allgather_async", &device_allgather_async, py::arg("input"), py::arg("shape"),
        py::arg("dtype"), py::arg("device"), py::arg("stream"), py::arg("name"));
  m.def("copy_device_result", &copy_device_result, py::arg("handle"), py::arg("output"),
        py::arg("stream") = 0);
  m.def("poll", &poll);
  m.attr("SUM") = static_cast<int>(ReduceOp::sum);
  m.attr("AVERAGE") = static_cast<int>(ReduceOp::average);
  m.attr("MIN") = static_cast<int>(ReduceOp::min);
  m.attr("MAX") = static_cast<int>(ReduceOp::max);
  m.attr("PRODUCT") = static_cast<int>(ReduceOp::product);
}
