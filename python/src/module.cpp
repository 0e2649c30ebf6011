// _riseml: the runtime (runtime/) for Python, conversions only: numpy arrays (or any C-contiguous
// buffer) to engine requests and results back, dtypes, the GIL released while the runtime
// blocks, errors translated. Arrays are reduced in place where the caller passes the same array
// as input and output, and kept alive until synchronize().
#include <riseml/cuda/status.hpp>
#include <riseml/runtime/runtime.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace py = pybind11;
using namespace riseml;
using engine::OpKind;

namespace {

// One runtime per process, never destroyed: finalize() (at exit, from riseml's atexit hook)
// ends it while the interpreter still runs.
runtime::Runtime& rt() {
  static auto* runtime = new runtime::Runtime();
  return *runtime;
}

DataType dtype_of(const py::array& a, const std::string& override_name) {
  if (!override_name.empty()) {
    auto t = parse_data_type(override_name);
    if (!t) throw py::type_error("riseml: unknown data type '" + override_name + "'");
    return *t;
  }
  static const std::map<std::pair<char, py::ssize_t>, DataType> by_kind_and_size{
      {{'f', 2}, DataType::float16}, {{'f', 4}, DataType::float32}, {{'f', 8}, DataType::float64},
      {{'i', 1}, DataType::int8},    {{'i', 2}, DataType::int16},   {{'i', 4}, DataType::int32},
      {{'i', 8}, DataType::int64},   {{'u', 1}, DataType::uint8},   {{'b', 1}, DataType::boolean}};
  auto it = by_kind_and_size.find({a.dtype().kind(), a.dtype().itemsize()});
  if (it != by_kind_and_size.end()) return it->second;
  throw py::type_error("riseml: unsupported dtype " + std::string(py::str(a.dtype())) +
                       " (float16/32/64, int8/16/32/64, uint8, bool; bfloat16 through torch)");
}

void check_contiguous(const py::array& a, const char* what) {
  if (!(a.flags() & py::array::c_style))
    throw py::value_error(std::string("riseml: the ") + what + " array must be C-contiguous");
}

// What an operation attaches to its runtime handle: the arrays the engine reads or writes (alive
// until synchronize()), and what synchronize() returns.
enum class Result { none, gathered, gathered_list, alltoall, device_shapes, device_alltoall };

struct PythonAttachment {
  py::object arrays;
  Result result = Result::none;
  py::object dtype;  // of the gathered arrays
};

// The runtime may drop an attachment on a thread without the GIL (a failed wait, shutdown()):
// the deleter takes it.
runtime::Attachment attach(py::object arrays, Result result = Result::none,
                           py::object dtype = py::none()) {
  return runtime::Attachment(new PythonAttachment{std::move(arrays), result, std::move(dtype)},
                             [](void* p) {
                               py::gil_scoped_acquire gil;
                               delete static_cast<PythonAttachment*>(p);
                             });
}

// Horovod's op=Adasum: one past the core's reduce operations.
constexpr int kAdasum = static_cast<int>(ReduceOp::product) + 1;

engine::Request request(OpKind kind, std::string name) {
  engine::Request r;
  r.kind = kind;
  r.name = std::move(name);
  return r;
}

engine::Request reduction(OpKind kind, std::string name, int op, double pre, double post) {
  if (op < 0 || op > kAdasum)
    throw py::value_error("riseml: unknown reduce op " + std::to_string(op));
  engine::Request r = request(kind, std::move(name));
  r.op = op == kAdasum ? ReduceOp::sum : static_cast<ReduceOp>(op);
  r.adasum = op == kAdasum;
  r.prescale = pre;
  r.postscale = post;
  return r;
}

// Host tensors of one dtype: `outs` empty (allgather, alltoall: the engine allocates the
// results), of the inputs' sizes (allreduce, broadcast), or holding this rank's rows
// (reducescatter).
void add_host_tensors(engine::Request& r, const std::vector<py::array>& ins,
                      const std::vector<py::array>& outs, const std::string& dtype,
                      const std::string& what) {
  const bool rows_out = r.kind == OpKind::reducescatter;
  r.dtype = dtype_of(ins.at(0), dtype);
  for (std::size_t i = 0; i < ins.size(); ++i) {
    check_contiguous(ins[i], "input");
    if (dtype_of(ins[i], dtype) != r.dtype)
      throw py::value_error("riseml: " + what + " needs tensors of one dtype");
    void* out = nullptr;
    if (!outs.empty()) {
      py::array o = outs[i];
      check_contiguous(o, "output");
      if (rows_out && !ins[i].dtype().is(o.dtype()))
        throw py::value_error("riseml: " + what + " needs tensors of one dtype");
      if (!rows_out && !o.writeable())
        throw py::value_error("riseml: the output array is read-only");
      if (!rows_out && (ins[i].nbytes() != o.nbytes() || !ins[i].dtype().is(o.dtype())))
        throw py::value_error("riseml: input and output arrays differ in size or dtype");
      out = o.mutable_data();
    }
    if ((outs.empty() || rows_out) && ins[i].ndim() == 0)  // allgather, alltoall, reducescatter
      throw py::value_error("riseml: " + what.substr(what.starts_with("grouped_") ? 8 : 0) +
                            " needs at least one dimension");
    r.tensors.push_back({ins[i].data(), out, {ins[i].shape(), ins[i].shape() + ins[i].ndim()}});
  }
}

runtime::HandleId submit(int process_set, engine::Request r, py::object keep,
                         Result result = Result::none, py::object dtype = py::none()) {
  return rt().submit(process_set, std::move(r), attach(std::move(keep), result, std::move(dtype)));
}

using Arrays = std::vector<py::array>;
using Shape = std::vector<std::int64_t>;

// allreduce (outputs of the inputs' sizes) and reducescatter (outputs of this rank's rows).
template <OpKind kind>
runtime::HandleId reduce_async(Arrays ins, Arrays outs, std::string name, int op, double pre,
                               double post, std::string dtype, int ps) {
  const std::string what = kind == OpKind::allreduce ? "grouped_allreduce" : "reducescatter";
  if (ins.empty() || ins.size() != outs.size())
    throw py::value_error("riseml: " + what + " needs equally many (>0) inputs and outputs");
  if (kind == OpKind::reducescatter && op == kAdasum)
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml: reducescatter does not support op=Adasum (Horovod neither)");
  auto r = reduction(kind, std::move(name), op, pre, post);
  add_host_tensors(r, ins, outs, dtype, what);
  return submit(ps, std::move(r), py::make_tuple(ins, outs));
}

// allgather and alltoall: the engine allocates the results, synchronize() returns them.
runtime::HandleId gather_async(Arrays ins, std::string name, std::string dtype, int ps,
                               Result result, OpKind kind = OpKind::allgather, Shape splits = {}) {
  if (ins.empty()) throw py::value_error("riseml: grouped_allgather needs at least one tensor");
  engine::Request r = request(kind, std::move(name));
  r.splits = std::move(splits);
  add_host_tensors(r, ins, {}, dtype, kind == OpKind::alltoall ? "alltoall" : "grouped_allgather");
  return submit(ps, std::move(r), py::cast(ins), result, ins[0].dtype());
}

// Tensors as raw pointers (torch's data_ptr()): host memory (device -1; contiguous CPU tensors
// that riseml.torch checked) or a CUDA device's, with the stream the framework wrote them on
// (torch.cuda.current_stream().cuda_stream).
using Pointers = std::vector<std::uintptr_t>;

engine::Request on_device(engine::Request r, const Pointers& ins, const Pointers& outs,
                          const std::vector<Shape>& shapes, const std::string& dtype, int device,
                          std::uintptr_t stream) {
  auto t = parse_data_type(dtype);
  if (!t) throw py::type_error("riseml: unsupported data type '" + dtype + "'");
  r.dtype = *t;
  r.stream = reinterpret_cast<void*>(stream);
  for (std::size_t i = 0; i < ins.size(); ++i)
    r.tensors.push_back({reinterpret_cast<const void*>(ins[i]),
                         reinterpret_cast<void*>(outs.empty() ? 0 : outs[i]), shapes[i], device});
  return r;
}

// An allreduce of tensors given as pointers; `where` names them in the error ("host", "device").
engine::Request pointer_allreduce(const Pointers& ins, const Pointers& outs,
                                  const std::vector<Shape>& shapes, const std::string& dtype,
                                  int device, std::uintptr_t stream, std::string name, int op,
                                  double pre, double post, const char* where) {
  if (ins.empty() || ins.size() != outs.size() || ins.size() != shapes.size())
    throw py::value_error(std::string("riseml: ") + where +
                          " allreduce needs equally many (>0) inputs, outputs, shapes");
  return on_device(reduction(OpKind::allreduce, std::move(name), op, pre, post), ins, outs,
                   shapes, dtype, device, stream);
}

// Host tensors as raw pointers, one dtype (riseml.torch's allreduce of contiguous CPU tensors).
runtime::HandleId host_allreduce_async(const Pointers& ins, const Pointers& outs,
                                       const std::vector<Shape>& shapes, const std::string& dtype,
                                       std::string name, int op, double pre, double post, int ps,
                                       py::object keep) {
  for (std::size_t i = 0; i < ins.size() && i < outs.size(); ++i)
    if (ins[i] == 0 || outs[i] == 0)
      throw py::value_error("riseml: host allreduce of a null pointer");
  return submit(ps, pointer_allreduce(ins, outs, shapes, dtype, -1, 0, std::move(name), op, pre,
                                      post, "host"),
                std::move(keep));
}

py::object synchronize(runtime::HandleId id) {
  runtime::CompletedOperation done;
  {
    py::gil_scoped_release release;
    done = rt().wait(id);
  }
  const auto* a = static_cast<const PythonAttachment*>(done.attachment.get());
  const engine::Handle& h = done.handle;
  if (!a || a->result == Result::none) return py::none();
  if (a->result == Result::device_shapes) {  // one per tensor; bytes follow
    py::list shapes;
    for (std::size_t i = 0; i < h.output_count(); ++i) shapes.append(py::cast(h.output_shape(i)));
    return shapes;
  }
  if (a->result == Result::device_alltoall)
    return py::make_tuple(h.output_shape(), h.received_splits());  // bytes follow
  auto array = [&](std::size_t i) {
    const auto& bytes = h.output(i);
    py::array out(py::reinterpret_borrow<py::dtype>(a->dtype), h.output_shape(i));
    if (!bytes.empty()) std::memcpy(out.mutable_data(), bytes.data(), bytes.size());
    return out;
  };
  if (a->result == Result::gathered) return array(0);
  if (a->result == Result::alltoall) return py::make_tuple(array(0), h.received_splits());
  py::list all;
  for (std::size_t i = 0; i < h.output_count(); ++i) all.append(array(i));
  return all;
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
      // PyErr_SetString: the same call on Debian's pybind11 2.10 and pip's 3.x.
      PyErr_SetString((e.kind() == ErrorKind::invalid_argument ? value_error : error).ptr(),
                      e.what());
    } catch (const RendezvousError& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
  using py::arg;
  // Blocking runtime calls release the GIL: other Python threads go on meanwhile.
  const auto unlocked = py::call_guard<py::gil_scoped_release>();
  // elastic: after a failure that blamed a rank, re-form the world without it (hvd.elastic).
  // after_failure: the elastic init after a collective failed (see RuntimeOptions).
  m.def("init", [](bool elastic, bool after_failure) {
    if (!rt().initialized()) {  // the options are read when they are used
      runtime::RuntimeOptions options{CommunicatorOptions::from_environment(),
                                      engine::EngineOptions::from_environment(), elastic};
      options.after_failure = after_failure;
      // Tests only (tests/python/test_torch_device_rules.py): requests that name a CUDA device
      // carry host pointers and run the engine's GPU path on its host-memory stand-in.
      if (const char* s = std::getenv("RISEML_ENGINE_DEVICE_STANDIN"); s && std::string(s) == "1")
        options.engine.gpu.host_standin = true;
      rt().init(options);
    }
  }, arg("elastic") = false, arg("after_failure") = false, unlocked);
  m.def("shutdown", [] { rt().shutdown(); }, unlocked);
  m.def("finalize", [] { rt().finalize(); }, unlocked);
  m.def("is_initialized", [] { return rt().initialized(); });
  // (number, why) of the world riseml-elastic announced and this worker has not formed, or None.
  m.def("world_announced", []() -> std::optional<std::pair<long long, std::string>> {
    auto a = rt().world_announced();
    if (!a) return std::nullopt;
    return std::make_pair(a->number, a->why);
  }, unlocked);
  m.def("left_out", [] { return rt().left_out(); });
  m.def("rank", [] { return rt().rank(); });
  m.def("size", [] { return rt().size(); });
  m.def("local_rank", [] { return rt().local_rank(); });
  m.def("local_size", [] { return rt().local_size(); });
  m.def("cross_rank", [] { return rt().cross_rank(); });
  m.def("cross_size", [] { return rt().cross_size(); });
  m.def("allreduce_async", [](py::array in, py::array out, std::string name, int op, double pre,
                              double post, std::string dtype, int ps) {
    return reduce_async<OpKind::allreduce>({in}, {out}, name, op, pre, post, dtype, ps);
  }, arg("input"), arg("output"), arg("name"), arg("op"), arg("prescale") = 1.0,
     arg("postscale") = 1.0, arg("dtype") = "", arg("process_set") = 0);
  // Contiguous host tensors as raw pointers (torch's data_ptr(); riseml.torch checks the
  // tensors): no numpy views to build per call, which cost a small call more than the engine.
  // `keep`: what stays alive until synchronize().
  m.def("host_allreduce_async", [](std::uintptr_t in, std::uintptr_t out, Shape shape,
                                   std::string dtype, std::string name, int op, double pre,
                                   double post, int ps, py::object keep) {
    return host_allreduce_async({in}, {out}, {std::move(shape)}, dtype, std::move(name), op, pre,
                                post, ps, std::move(keep));
  }, arg("input"), arg("output"), arg("shape"), arg("dtype"), arg("name"), arg("op"),
     arg("prescale"), arg("postscale"), arg("process_set"), arg("keep"));
  m.def("host_grouped_allreduce_async", &host_allreduce_async, arg("inputs"), arg("outputs"),
        arg("shapes"), arg("dtype"), arg("name"), arg("op"), arg("prescale"), arg("postscale"),
        arg("process_set"), arg("keep"));
  m.def("grouped_allreduce_async", &reduce_async<OpKind::allreduce>, arg("inputs"), arg("outputs"),
        arg("name"), arg("op"), arg("prescale") = 1.0, arg("postscale") = 1.0, arg("dtype") = "",
        arg("process_set") = 0);
  m.def("reducescatter_async", &reduce_async<OpKind::reducescatter>, arg("inputs"),
        arg("outputs"), arg("name"), arg("op"), arg("prescale") = 1.0, arg("postscale") = 1.0,
        arg("dtype") = "", arg("process_set") = 0);
  m.def("reducescatter_rows", &engine::reducescatter_rows, arg("rows"), arg("size"), arg("rank"),
        "the rows of a reducescatter's first dimension that `rank` receives");
  m.def("alltoall_async", [](py::array in, Shape splits, std::string name, std::string dtype,
                             int ps) {
    return gather_async({in}, name, dtype, ps, Result::alltoall, OpKind::alltoall, splits);
  }, arg("input"), arg("splits"), arg("name"), arg("dtype") = "", arg("process_set") = 0);
  m.def("grouped_allgather_async", [](Arrays ins, std::string name, std::string dtype, int ps) {
    return gather_async(ins, name, dtype, ps, Result::gathered_list);
  }, arg("inputs"), arg("name"), arg("dtype") = "", arg("process_set") = 0);
  m.def("allgather_async", [](py::array in, std::string name, std::string dtype, int ps) {
    return gather_async({in}, name, dtype, ps, Result::gathered);
  }, arg("input"), arg("name"), arg("dtype") = "", arg("process_set") = 0);
  m.def("broadcast_async", [](py::array in, py::array out, int root, std::string name,
                              std::string dtype, int ps) {
    engine::Request r = request(OpKind::broadcast, std::move(name));
    r.root = root;
    add_host_tensors(r, {in}, {out}, dtype, "broadcast");
    return submit(ps, std::move(r), py::make_tuple(in, out));
  }, arg("input"), arg("output"), arg("root"), arg("name"), arg("dtype") = "",
     arg("process_set") = 0);
  m.def("add_process_set", [](std::vector<int> ranks) { return rt().add_process_set(ranks); },
        arg("ranks"), unlocked);
  m.def("remove_process_set", [](int id) { return rt().remove_process_set(id); }, arg("id"),
        unlocked);
  m.def("process_set_ranks", [](int id) { return rt().process_set_ranks(id); }, arg("id"));
  m.def("process_set_ids", [] { return rt().process_set_ids(); });
  m.def("start_timeline", [](std::string path) { rt().start_timeline(path); }, arg("path"));
  m.def("stop_timeline", [] { rt().stop_timeline(); });
  m.def("barrier", [](int ps) { rt().barrier(ps); }, arg("process_set") = 0, unlocked);
  m.def("join", [] { return rt().join(); }, unlocked);
  m.def("synchronize", &synchronize);
  m.def("poll", [](runtime::HandleId id) { return rt().poll(id); });
  m.def("gpu_status", [] {
    return py::make_tuple(cuda::built_with_cuda(), cuda::available(), cuda::status());
  }, "(built with GPU support, a CUDA device usable now, one line saying which)");
  m.def("nccl_version", &cuda::nccl_version, "NCCL's version code; 0 in a build without NCCL");
  m.def("device_allreduce_async", [](Pointers ins, Pointers outs, std::vector<Shape> shapes,
                                     std::string dtype, int device, std::uintptr_t stream,
                                     std::string name, int op, double pre, double post, int ps) {
    return rt().submit(ps, pointer_allreduce(ins, outs, shapes, dtype, device, stream,
                                             std::move(name), op, pre, post, "device"));
  }, arg("inputs"), arg("outputs"), arg("shapes"), arg("dtype"), arg("device"), arg("stream"),
     arg("name"), arg("op"), arg("prescale") = 1.0, arg("postscale") = 1.0, arg("process_set") = 0);
  // outputs[i]: this rank's rows of tensor i (0 where it gets none).
  m.def("device_reducescatter_async", [](Pointers ins, Pointers outs, std::vector<Shape> shapes,
                                         std::string dtype, int device, std::uintptr_t stream,
                                         std::string name, int op, double pre, double post,
                                         int ps) {
    if (ins.empty() || ins.size() != outs.size() || ins.size() != shapes.size())
      throw py::value_error("riseml: device reducescatter needs equally many (>0) inputs, "
                            "outputs, shapes");
    for (const Shape& shape : shapes)
      if (shape.empty())
        throw py::value_error("riseml: reducescatter needs at least one dimension, got a scalar");
    return rt().submit(ps, on_device(reduction(OpKind::reducescatter, std::move(name), op, pre, post),
                                     ins, outs, shapes, dtype, device, stream));
  }, arg("inputs"), arg("outputs"), arg("shapes"), arg("dtype"), arg("device"), arg("stream"),
     arg("name"), arg("op"), arg("prescale") = 1.0, arg("postscale") = 1.0, arg("process_set") = 0);
  m.def("device_broadcast_async", [](std::uintptr_t in, std::uintptr_t out, Shape shape,
                                     std::string dtype, int device, std::uintptr_t stream,
                                     int root, std::string name, int ps) {
    engine::Request r = request(OpKind::broadcast, std::move(name));
    r.root = root;
    return rt().submit(ps, on_device(std::move(r), {in}, {out}, {shape}, dtype, device, stream));
  }, arg("input"), arg("output"), arg("shape"), arg("dtype"), arg("device"), arg("stream"),
     arg("root"), arg("name"), arg("process_set") = 0);
  // One tensor or a group; synchronize() returns their gathered shapes (the bytes follow, by
  // copy_device_result).
  m.def("device_allgather_async", [](Pointers ins, std::vector<Shape> shapes, std::string dtype,
                                     int device, std::uintptr_t stream, std::string name, int ps) {
    if (ins.empty() || ins.size() != shapes.size())
      throw py::value_error("riseml: device allgather needs equally many (>0) inputs and shapes");
    for (const Shape& shape : shapes)
      if (shape.empty()) throw py::value_error("riseml: allgather needs at least one dimension");
    auto r = on_device(request(OpKind::allgather, std::move(name)), ins, {}, shapes, dtype, device,
                       stream);
    return rt().submit(ps, std::move(r), attach(py::none(), Result::device_shapes));
  }, arg("inputs"), arg("shapes"), arg("dtype"), arg("device"), arg("stream"), arg("name"),
     arg("process_set") = 0);
  m.def("device_alltoall_async", [](std::uintptr_t in, Shape shape, Shape splits, std::string dtype,
                                    int device, std::uintptr_t stream, std::string name, int ps) {
    if (shape.empty()) throw py::value_error("riseml: alltoall needs at least one dimension");
    auto r = request(OpKind::alltoall, std::move(name));
    r.splits = std::move(splits);
    r = on_device(std::move(r), {in}, {}, {shape}, dtype, device, stream);
    return rt().submit(ps, std::move(r), attach(py::none(), Result::device_alltoall));
  }, arg("input"), arg("shape"), arg("splits"), arg("dtype"), arg("device"), arg("stream"),
     arg("name"), arg("process_set") = 0);
  // One output pointer per result (a grouped allgather's per tensor); none: drop the result (the
  // caller could not allocate its tensors).
  m.def("copy_device_result", [](runtime::HandleId id, std::vector<std::uintptr_t> outs,
                                 std::uintptr_t stream) {
    std::vector<void*> dsts;
    for (std::uintptr_t out : outs) dsts.push_back(reinterpret_cast<void*>(out));
    rt().copy_device_result(id, dsts, reinterpret_cast<void*>(stream));
  }, arg("handle"), arg("outputs"), arg("stream") = 0, unlocked);
  for (auto [name, op] : {std::pair{"SUM", ReduceOp::sum}, {"AVERAGE", ReduceOp::average},
                          {"MIN", ReduceOp::min}, {"MAX", ReduceOp::max},
                          {"PRODUCT", ReduceOp::product}})
    m.attr(name) = static_cast<int>(op);
  m.attr("ADASUM") = kAdasum;
}
