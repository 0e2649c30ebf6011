"""riseml.torch: Horovod's torch API over the riseml engine.

    import riseml.torch as hvd
    hvd.init()
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)

CPU tensors are reduced in place in their own memory (by pointer or a numpy view, no copy). CUDA
tensors are reduced where they lie, with NCCL, ordered after the work already on torch's current
stream, when this build has GPU support (riseml.torch.gpu_status()); otherwise they go through a
CPU copy, with a warning once. Reductions of int16 and bool CUDA tensors, which NCCL cannot
reduce, go through a CPU copy too. Results lie on the input's device.
"""
import warnings as _warnings

import torch as _torch

import _riseml
import riseml as _common
from riseml import (Adasum, Average, HorovodInternalError, HostsUpdatedInterrupt, Max, Min,
                    ProcessSet, Product, RisemlError, RisemlValueError, Sum, add_process_set,
                    barrier, ccl_built, cross_rank, cross_size, cuda_built, ddl_built,
                    global_process_set, gloo_built, gloo_enabled, init, is_initialized, join,
                    local_rank, local_size, mpi_built, mpi_enabled, mpi_threads_supported,
                    nccl_built, rank, remove_process_set, rocm_built, shutdown, size,
                    start_timeline, stop_timeline)
from riseml import _root, _ps
from riseml.torch.compression import Compression
from riseml.torch.functions import (allgather_object, broadcast_object, broadcast_optimizer_state,
                                    broadcast_parameters)
from riseml.torch.optimizer import DistributedOptimizer
from riseml.torch.sync_batch_norm import SyncBatchNorm

__all__ = [
    "Average", "Sum", "Min", "Max", "Product", "Adasum", "RisemlError", "RisemlValueError",
    "HorovodInternalError", "HostsUpdatedInterrupt", "Compression",
    "init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank",
    "cross_size", "cross_rank", "mpi_built", "mpi_enabled", "mpi_threads_supported",
    "gloo_built", "gloo_enabled", "nccl_built", "ccl_built", "ddl_built", "cuda_built",
    "rocm_built", "start_timeline", "stop_timeline",
    "ProcessSet", "global_process_set", "add_process_set", "remove_process_set",
    "allreduce", "allreduce_", "allreduce_async", "allreduce_async_",
    "grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async",
    "grouped_allreduce_async_", "sparse_allreduce_async", "allgather", "allgather_async",
    "grouped_allgather", "grouped_allgather_async", "broadcast", "broadcast_",
    "broadcast_async", "broadcast_async_", "alltoall", "alltoall_async", "reducescatter",
    "reducescatter_async", "grouped_reducescatter", "grouped_reducescatter_async",
    "broadcast_parameters", "broadcast_optimizer_state",
    "broadcast_object", "allgather_object", "synchronize", "poll", "join", "barrier",
    "DistributedOptimizer", "SyncBatchNorm", "gpu_status",
]

# handle -> (tensor returned by synchronize, the buffer the engine writes the result into
#            [, tensors kept alive until then])
_handles = {}

_GPU_BUILT, _GPU_USABLE, _GPU_STATUS = _riseml.gpu_status()
_warned_host_copy = False

_DTYPE_NAMES = {
    _torch.float32: "float32", _torch.float64: "float64", _torch.float16: "float16",
    _torch.bfloat16: "bfloat16", _torch.int32: "int32", _torch.int64: "int64",
    _torch.uint8: "uint8", _torch.int8: "int8", _torch.int16: "int16", _torch.bool: "bool",
}


def gpu_status():
    """(built with GPU support, a CUDA device usable, one line saying which)."""
    return _GPU_BUILT, _GPU_USABLE, _GPU_STATUS


# NCCL reduces no int16 or bool: reductions (allreduce, reducescatter) of these CUDA tensors go
# through host memory. Their allgather, broadcast and alltoall stay on the GPU (the engine moves
# them as bytes).
_HOST_REDUCED = (_torch.int16, _torch.bool)


def _is_cuda(tensor):
    return tensor.device.type == "cuda"


def _on_gpu(tensor, reduction=False):
    """True: `tensor` goes through its collective on its GPU with NCCL. False: on the CPU (host
    tensors; CUDA tensors when this build or process cannot use the GPU, with a warning once;
    `reduction` of CUDA tensors of a dtype NCCL cannot reduce, silently)."""
    if not _is_cuda(tensor):
        return False
    if _GPU_BUILT and _GPU_USABLE:
        return not (reduction and tensor.dtype in _HOST_REDUCED)
    global _warned_host_copy
    if not _warned_host_copy:
        _warned_host_copy = True
        _warnings.warn("riseml: CUDA tensors are reduced through host memory, because "
                       + _GPU_STATUS + " (build riseml with CUDA and NCCL for GPU collectives)",
                       RuntimeWarning, stacklevel=3)
    return False


def _device_view(tensor):
    """(contiguous tensor the engine reads, dtype name, CUDA device, torch's stream handle)."""
    t = tensor.detach()
    if not t.is_contiguous():
        t = t.contiguous()
    name = _DTYPE_NAMES.get(t.dtype)
    if name is None:
        raise TypeError("riseml: unsupported dtype %s (float16/32/64, bfloat16, "
                        "int8/16/32/64, uint8, bool)" % t.dtype)
    device, stream = _device_and_stream(t)
    return t, name, device, stream


def _cpu_view(tensor):
    """(numpy view the engine may read and write, the CPU tensor behind it, dtype override)."""
    t = tensor.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if not t.is_contiguous():
        t = t.contiguous()
    if t.dtype == _torch.bfloat16:
        return t.view(_torch.int16).numpy(), t, "bfloat16"
    if t.dtype not in _DTYPE_NAMES:
        raise TypeError("riseml: unsupported dtype %s (float16/32/64, bfloat16, "
                        "int8/16/32/64, uint8, bool)" % t.dtype)
    return t.numpy(), t, ""


def _numpy_of(cpu, dtype):
    """The numpy view of a CPU tensor made by _cpu_view (bfloat16 as int16 bits)."""
    return cpu.view(_torch.int16).numpy() if dtype else cpu.numpy()


def _shares_memory(a, b):
    return a.data_ptr() == b.data_ptr() and a.device == b.device


def _check_process_set(process_set):
    return _ps(process_set)


def _out_cpu(src_cpu, dtype, output, tensor):
    """(numpy array the engine writes, CPU tensor behind it): in place on `tensor`'s own memory
    when `output is tensor` and the CPU view is that memory; straight into `output` when it is a
    CPU tensor laid out as the input (no second buffer, no copy at synchronize); else a new
    tensor."""
    if output is tensor:
        if _shares_memory(src_cpu, tensor):
            return None, src_cpu
    elif (output.device.type == "cpu" and output.dtype == src_cpu.dtype
          and output.shape == src_cpu.shape and output.is_contiguous()):
        out = output.detach()
        return _numpy_of(out, dtype), out
    dst_cpu = _torch.empty_like(src_cpu)
    return _numpy_of(dst_cpu, dtype), dst_cpu


# ----------------------------------------------------------------------------------- allreduce

def _host_pointers_fit(tensor, output):
    """True when both are contiguous, non-empty CPU tensors of one supported dtype and shape, so
    the engine may take their memory as raw pointers (the common case, and the fastest)."""
    if tensor.device.type != "cpu" or not tensor.is_contiguous() or not tensor.numel():
        return False
    if tensor.dtype not in _DTYPE_NAMES:
        return False
    if output is tensor:
        return True
    return (output.device.type == "cpu" and output.dtype == tensor.dtype
            and output.shape == tensor.shape and output.is_contiguous())


# torch's current CUDA stream as an integer, without making a Stream object (torch 2.x).
_raw_stream = getattr(_torch._C, "_cuda_getCurrentRawStream", None)


def _device_and_stream(tensor):
    """(CUDA device index of `tensor`, torch's current stream there as an integer)."""
    index = tensor.device.index
    if index is None:
        index = _torch.cuda.current_device()
    if _raw_stream is not None:
        return index, _raw_stream(index)
    return index, _torch.cuda.current_stream(index).cuda_stream


def _is_dense(t):
    """True when `t`'s elements fill one run of its storage, each once, in some order
    (contiguous, channels_last, a transpose): an elementwise reduction may take the run."""
    if t.is_contiguous():
        return True
    expected = 1
    for stride, size in sorted((st, sz) for st, sz in zip(t.stride(), t.shape) if sz != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _dense_on_gpu(tensor, output, name, op, prescale_factor, postscale_factor, set_id):
    """The common GPU case, fast (every gradient of DistributedOptimizer): one CUDA tensor whose
    memory is dense (contiguous, or channels_last as a conv layer's gradient is) is reduced
    elementwise straight in its storage: no contiguous copy and no copy back. The output is the
    tensor itself or laid out alike (empty_like). None when it does not fit."""
    if op == Adasum or not _is_dense(tensor):
        return None
    dtype = _DTYPE_NAMES.get(tensor.dtype)
    count = tensor.numel()
    if dtype is None or count == 0:
        return None
    if output is not tensor and (output.dtype != tensor.dtype or output.device != tensor.device
                                 or output.shape != tensor.shape
                                 or output.stride() != tensor.stride()):
        return None
    index, stream = _device_and_stream(tensor)
    h = _riseml.device_allreduce_async([tensor.data_ptr()], [output.data_ptr()], [[count]], dtype,
                                       index, stream, name, op, prescale_factor, postscale_factor,
                                       set_id)
    _handles[h] = (output, output, tensor)
    return h


def _allreduce_into(tensor, output, name, op, prescale_factor, postscale_factor, process_set):
    set_id = _check_process_set(process_set)
    if _host_pointers_fit(tensor, output):
        h = _riseml.host_allreduce_async(tensor.data_ptr(), output.data_ptr(), tensor.shape,
                                         _DTYPE_NAMES[tensor.dtype], name, op, prescale_factor,
                                         postscale_factor, set_id, (tensor, output))
        _handles[h] = (output, output)
        return h
    if _on_gpu(tensor, reduction=True):
        h = _dense_on_gpu(tensor, output, name, op, prescale_factor, postscale_factor, set_id)
        if h is not None:
            return h
        return _grouped_on_gpu([tensor], [output], name, op, prescale_factor, postscale_factor,
                               set_id, single=True)
    src, src_cpu, dtype = _cpu_view(tensor)
    dst, dst_cpu = _out_cpu(src_cpu, dtype, output, tensor)
    if dst is None:
        dst = src  # in place, no copy
    h = _riseml.allreduce_async(src, dst, name, op, prescale_factor, postscale_factor, dtype,
                                set_id)
    _handles[h] = (output, dst_cpu)
    return h


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    """Starts an allreduce of `tensor` into a new tensor; synchronize(handle) returns it."""
    op = _common._resolve_op(op, average)
    output = _torch.empty_like(tensor)
    return _allreduce_into(tensor, output, _common._name("allreduce", name, process_set), op,
                           prescale_factor, postscale_factor, process_set)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    """Starts an in-place allreduce of `tensor`."""
    op = _common._resolve_op(op, average)
    return _allreduce_into(tensor, tensor, _common._name("allreduce", name, process_set), op,
                           prescale_factor, postscale_factor, process_set)


def _differentiable(tensor):
    return tensor.requires_grad and _torch.is_grad_enabled()


def _grad_op(op):
    """The reduction a gradient goes through: Adasum's gradients are averaged (as Horovod)."""
    return Average if op == Adasum else op


class _AllreduceFunction(_torch.autograd.Function):
    """allreduce with a gradient: the same reduction of the output gradients (as Horovod)."""

    @staticmethod
    def forward(ctx, tensor, name, op, prescale_factor, postscale_factor, process_set):
        ctx.op, ctx.scales, ctx.process_set = op, (prescale_factor, postscale_factor), process_set
        return synchronize(allreduce_async(tensor, None, name, op, prescale_factor,
                                           postscale_factor, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = synchronize(allreduce_async(grad_output, None, None, _grad_op(ctx.op), *ctx.scales,
                                           process_set=ctx.process_set))
        return grad, None, None, None, None, None


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """A new tensor: the reduction of `tensor` over the ranks (default: average).
    Differentiable: the gradient is the same reduction of the output gradients."""
    op = _common._resolve_op(op, average)
    compressed, ctx = compression.compress(tensor)
    if _differentiable(compressed):
        name = _common._name("allreduce", name, process_set)
        out = _AllreduceFunction.apply(compressed, name, op,
                                       prescale_factor, postscale_factor, process_set)
    else:
        out = synchronize(allreduce_async(compressed, None, name, op, prescale_factor,
                                          postscale_factor, process_set))
    return compression.decompress(out, ctx)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor,
                                        postscale_factor, process_set))


def _one_device_views(tensors, what):
    """The _device_view of each tensor; they must be of one dtype on one device (one NCCL
    call)."""
    views = [_device_view(t) for t in tensors]
    if len({(v[1], v[2]) for v in views}) != 1:
        # a ValueError that is also a RuntimeError, as Horovod's tests expect
        raise RisemlValueError("riseml: %s of CUDA tensors needs tensors of one dtype on one "
                               "device" % what)
    return views


def _check_one_kind(tensors, what):
    """Refuses a list of CUDA and CPU tensors together (one operation runs in one place)."""
    cuda = [_is_cuda(t) for t in tensors]
    if any(cuda) and not all(cuda):
        raise RisemlValueError("riseml: %s got CUDA and CPU tensors; pass one kind" % what)


def _grouped_on_gpu(tensors, outputs, name, op, prescale_factor, postscale_factor, set_id,
                    single=False):
    if op == Adasum:
        raise ValueError("riseml: Adasum of CUDA tensors is not supported; reduce CPU tensors")
    views = _one_device_views(tensors, "grouped_allreduce")
    srcs, dsts = [], []
    for (src, _, _, _), t, out in zip(views, tensors, outputs):
        dst = src if out is t and _shares_memory(src, t) else _torch.empty_like(src)
        srcs.append(src)
        dsts.append(dst)
    _, dtype, device, stream = views[0]
    h = _riseml.device_allreduce_async([s.data_ptr() for s in srcs], [d.data_ptr() for d in dsts],
                                       [list(s.shape) for s in srcs], dtype, device, stream,
                                       name, op, prescale_factor, postscale_factor, set_id)
    if single:
        _handles[h] = (outputs[0], dsts[0], srcs)
    else:
        _handles[h] = (list(outputs), dsts, srcs)
    return h


def _grouped(tensors, outputs, name, op, prescale_factor, postscale_factor, process_set):
    set_id = _check_process_set(process_set)
    _check_one_kind(tensors, "grouped_allreduce")
    if tensors and all([_on_gpu(t, reduction=True) for t in tensors]):
        return _grouped_on_gpu(tensors, outputs, name, op, prescale_factor, postscale_factor,
                               set_id)
    if tensors and len({t.dtype for t in tensors}) == 1 and all(
            _host_pointers_fit(t, out) for t, out in zip(tensors, outputs)):
        h = _riseml.host_grouped_allreduce_async(
            [t.data_ptr() for t in tensors], [out.data_ptr() for out in outputs],
            [t.shape for t in tensors], _DTYPE_NAMES[tensors[0].dtype], name, op,
            prescale_factor, postscale_factor, set_id, (tuple(tensors), tuple(outputs)))
        _handles[h] = (list(outputs), list(outputs))
        return h
    views = [_cpu_view(t) for t in tensors]
    dtypes = {v[2] for v in views}
    srcs, dsts, dst_cpus = [], [], []
    for (src, src_cpu, dtype), t, out in zip(views, tensors, outputs):
        dst, dst_cpu = _out_cpu(src_cpu, dtype, out, t)
        srcs.append(src)
        dsts.append(src if dst is None else dst)
        dst_cpus.append(dst_cpu)
    h = _riseml.grouped_allreduce_async(srcs, dsts, name, op, prescale_factor, postscale_factor,
                                        dtypes.pop() if len(dtypes) == 1 else "", set_id)
    _handles[h] = (list(outputs), dst_cpus)
    return h


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    op = _common._resolve_op(op, average)
    return _grouped(tensors, [_torch.empty_like(t) for t in tensors],
                    _common._name("grouped_allreduce", name, process_set), op, prescale_factor,
                    postscale_factor, process_set)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    op = _common._resolve_op(op, average)
    name = _common._name("grouped_allreduce", name, process_set)
    return _grouped(tensors, list(tensors), name, op,
                    prescale_factor, postscale_factor, process_set)


class _GroupedAllreduceFunction(_torch.autograd.Function):
    """grouped allreduce with gradients: the same grouped reduction of the output gradients."""

    @staticmethod
    def forward(ctx, name, op, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.op, ctx.scales, ctx.process_set = op, (prescale_factor, postscale_factor), process_set
        return tuple(synchronize(grouped_allreduce_async(list(tensors), None, name, op,
                                                         prescale_factor, postscale_factor,
                                                         process_set)))

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = synchronize(grouped_allreduce_async(
            [g.contiguous() for g in grad_outputs], None, None, _grad_op(ctx.op), *ctx.scales,
            process_set=ctx.process_set))
        return (None, None, None, None, None) + tuple(grads)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Reduces the tensors as one unit (ready, fused and completed together).
    Differentiable like allreduce."""
    op = _common._resolve_op(op, average)
    pairs = [compression.compress(t) for t in tensors]
    compressed = [p[0] for p in pairs]
    if any(_differentiable(t) for t in compressed):
        name = _common._name("grouped_allreduce", name, process_set)
        outs = _GroupedAllreduceFunction.apply(name, op,
                                               prescale_factor, postscale_factor, process_set,
                                               *compressed)
    else:
        outs = synchronize(grouped_allreduce_async(compressed, None, name, op, prescale_factor,
                                                   postscale_factor, process_set))
    return [compression.decompress(o, p[1]) for o, p in zip(outs, pairs)]


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                                postscale_factor, process_set))


class _SparseHandle:
    """The handle of a sparse allreduce: call it (or synchronize() it) for the result, as
    Horovod's sparse_allreduce_async returns a function."""

    def __init__(self, result):
        self._result = result
        self._value = None

    def __call__(self):
        if self._result is not None:
            self._value, self._result = self._result(), None
        return self._value


def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """A sparse tensor's allreduce (Horovod's way): every rank's indices and values are
    gathered, and the result is their (uncoalesced) sparse sum; Average divides the values.
    Returns a handle to call (or synchronize)."""
    if op not in (Sum, Average, None):
        raise ValueError("riseml: sparse allreduce supports Sum and Average only")
    t = tensor.coalesce() if not tensor.is_coalesced() else tensor
    name = _common._name("sparse_allreduce", name, process_set)
    # Gathered along the first dimension: indices go as (nnz, ndim) rows.
    indices = allgather_async(t._indices().transpose(0, 1).contiguous(), name + ".indices",
                              process_set)
    values = allgather_async(t._values().contiguous(), name + ".values", process_set)
    members = process_set.size() if process_set is not None else size()

    def result():
        idx = synchronize(indices)
        val = synchronize(values)
        if op in (Average, None):
            val = val / members
        return _torch.sparse_coo_tensor(idx.transpose(0, 1), val, t.size())

    return _SparseHandle(result)


# ----------------------------------------------------------------------------------- allgather

def allgather_async(tensor, name=None, process_set=global_process_set):
    set_id = _check_process_set(process_set)
    if _on_gpu(tensor):
        src, dtype, device, stream = _device_view(tensor)
        h = _riseml.device_allgather_async([src.data_ptr()], [list(src.shape)], dtype, device,
                                           stream, _common._name("allgather", name, process_set),
                                           set_id)
        _handles[h] = ("allgather-gpu", src)
        return h
    src, src_cpu, dtype = _cpu_view(tensor)
    h = _riseml.allgather_async(src, _common._name("allgather", name, process_set), dtype, set_id)
    _handles[h] = ("allgather", tensor)
    return h


def _my_rows(rows, process_set):
    """The offset of this rank's rows among `rows` (rows per rank of the set)."""
    me = process_set.rank() if process_set is not None else rank()
    return sum(rows[:me]), rows[me]


class _AllgatherFunction(_torch.autograd.Function):
    """allgather with a gradient: this rank's rows of the averaged output gradients (as
    Horovod)."""

    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.process_set = process_set
        ctx.rows = synchronize(allgather_async(
            _torch.tensor([tensor.shape[0]], dtype=_torch.int64), name + ".rows",
            process_set)).tolist()
        return synchronize(allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = synchronize(allreduce_async(grad_output.contiguous(), None, None, Average,
                                           process_set=ctx.process_set))
        offset, rows = _my_rows(ctx.rows, ctx.process_set)
        return grad.narrow(0, offset, rows), None, None


def allgather(tensor, name=None, process_set=global_process_set):
    """Every rank's tensor concatenated along the first dimension (which may differ).
    Differentiable: each rank gets its rows of the averaged output gradients."""
    if _differentiable(tensor):
        name = _common._name("allgather", name, process_set)
        return _AllgatherFunction.apply(tensor, name, process_set)
    return synchronize(allgather_async(tensor, name, process_set))


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    """Starts an allgather of each tensor, as one operation. CUDA tensors of one device and
    dtype: on that GPU (one NCCL allgather of them all); else through host memory."""
    set_id = _check_process_set(process_set)
    tensors = list(tensors)
    name = _common._name("grouped_allgather", name, process_set)
    _check_one_kind(tensors, "grouped_allgather")
    if tensors and all(_on_gpu(t) for t in tensors):
        views = _one_device_views(tensors, "grouped_allgather")
        _, dtype, device, stream = views[0]
        srcs = [v[0] for v in views]
        h = _riseml.device_allgather_async([s.data_ptr() for s in srcs],
                                           [list(s.shape) for s in srcs], dtype, device, stream,
                                           name, set_id)
        _handles[h] = ("grouped_allgather-gpu", srcs)
        return h
    views = [_cpu_view(t) for t in tensors]
    dtypes = {v[2] for v in views}
    h = _riseml.grouped_allgather_async([v[0] for v in views], name,
                                        dtypes.pop() if len(dtypes) == 1 else "", set_id)
    _handles[h] = ("grouped_allgather", list(tensors))
    return h


class _GroupedAllgatherFunction(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.process_set = process_set
        rows = synchronize(grouped_allgather_async(
            [_torch.tensor([t.shape[0]], dtype=_torch.int64) for t in tensors], name + ".rows",
            process_set))
        ctx.rows = [r.tolist() for r in rows]
        return tuple(synchronize(grouped_allgather_async(list(tensors), name, process_set)))

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = synchronize(grouped_allreduce_async([g.contiguous() for g in grad_outputs], None,
                                                    None, Average, process_set=ctx.process_set))
        out = []
        for g, rows in zip(grads, ctx.rows):
            offset, mine = _my_rows(rows, ctx.process_set)
            out.append(g.narrow(0, offset, mine))
        return (None, None) + tuple(out)


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """allgather of each tensor, as one operation: a list of the gathered tensors.
    Differentiable like allgather."""
    name = _common._name("grouped_allgather", name, process_set)
    if any(_differentiable(t) for t in tensors):
        return list(_GroupedAllgatherFunction.apply(name, process_set, *tensors))
    return synchronize(grouped_allgather_async(tensors, name, process_set))


# ----------------------------------------------------------------------------------- broadcast

def _broadcast_into(tensor, output, root_rank, name, process_set):
    set_id = _check_process_set(process_set)
    root = _root(root_rank, process_set)
    if _on_gpu(tensor):
        src, dtype, device, stream = _device_view(tensor)
        dst = src if output is tensor and _shares_memory(src, tensor) else _torch.empty_like(src)
        h = _riseml.device_broadcast_async(src.data_ptr(), dst.data_ptr(), list(src.shape), dtype,
                                           device, stream, root, name, set_id)
        _handles[h] = (output, dst, src)
        return h
    src, src_cpu, dtype = _cpu_view(tensor)
    dst, dst_cpu = _out_cpu(src_cpu, dtype, output, tensor)
    h = _riseml.broadcast_async(src, src if dst is None else dst, root, name, dtype, set_id)
    _handles[h] = (output, dst_cpu)
    return h


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    return _broadcast_into(tensor, _torch.empty_like(tensor), root_rank,
                           _common._name("broadcast", name, process_set), process_set)


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    return _broadcast_into(tensor, tensor, root_rank, _common._name("broadcast", name, process_set),
                           process_set)


class _BroadcastFunction(_torch.autograd.Function):
    """broadcast with a gradient: the root gets the average of the output gradients, the
    others zeros (as Horovod)."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank, ctx.process_set = root_rank, process_set
        return synchronize(broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = synchronize(allreduce_async(grad_output.contiguous(), None, None, Average,
                                           process_set=ctx.process_set))
        if rank() != ctx.root_rank:
            grad = grad * 0
        return grad, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """A new tensor: `root_rank`'s tensor, on every rank. Differentiable."""
    if _differentiable(tensor):
        name = _common._name("broadcast", name, process_set)
        return _BroadcastFunction.apply(tensor, root_rank, name,
                                        process_set)
    return synchronize(broadcast_async(tensor, root_rank, name, process_set))


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


# ------------------------------------------------------------------------------------ alltoall

def _splits_of(splits):
    """The splits as a list of ints; they must be integers (Horovod: int32)."""
    if splits is None:
        return []
    if isinstance(splits, _torch.Tensor):
        if splits.dtype not in (_torch.int32, _torch.int64):
            raise ValueError("riseml: alltoall splits must be a tensor of int32, not %s"
                             % splits.dtype)
        if splits.dim() != 1:
            raise ValueError("riseml: alltoall splits must be one-dimensional")
        return [int(v) for v in splits.cpu().tolist()]
    return _common._splits_list(splits)


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Starts an alltoall; synchronize(handle) returns (output, received_splits)."""
    set_id = _check_process_set(process_set)
    name = _common._name("alltoall", name, process_set)
    if _on_gpu(tensor):  # on the GPU: NCCL sends and receives into an engine device buffer
        if tensor.dim() == 0:
            raise ValueError("riseml: alltoall needs at least one dimension, got a scalar")
        src, dtype, device, stream = _device_view(tensor)
        h = _riseml.device_alltoall_async(src.data_ptr(), list(src.shape), _splits_of(splits),
                                          dtype, device, stream, name, set_id)
        _handles[h] = ("alltoall-gpu", (src, _splits_device(splits)))
        return h
    src, src_cpu, dtype = _cpu_view(tensor)
    h = _riseml.alltoall_async(src, _splits_of(splits), name, dtype,
                               set_id)
    _handles[h] = ("alltoall", (tensor, _splits_device(splits)))
    return h


def _splits_device(splits):
    """Where alltoall's received splits go (as Horovod): the device of a `splits` tensor (a
    CUDA one included, whatever the data's device), else the CPU."""
    return splits.device if isinstance(splits, _torch.Tensor) else _torch.device("cpu")


class _AlltoallFunction(_torch.autograd.Function):
    """alltoall with a gradient: the output gradients sent back the way they came."""

    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        ctx.process_set = process_set
        output, received = synchronize(alltoall_async(tensor, splits, name, process_set))
        ctx.received = received
        return output, received

    @staticmethod
    def backward(ctx, grad_output, grad_received):
        del grad_received
        grad, _ = synchronize(alltoall_async(grad_output.contiguous(), ctx.received, None,
                                             ctx.process_set))
        return grad, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Sends splits[r] rows of the first dimension to rank r (default: an equal split) and
    returns the rows received from every rank in rank order; with `splits`, also the rows
    received per rank (int32). Differentiable."""
    name = _common._name("alltoall", name, process_set)
    if _differentiable(tensor):
        output, received = _AlltoallFunction.apply(tensor, splits, name, process_set)
    else:
        output, received = synchronize(alltoall_async(tensor, splits, name, process_set))
    return output if splits is None else (output, received)


# ------------------------------------------------------------------------------- reducescatter

def _scatter_op(op):
    op = Average if op is None else op
    if op == Adasum:  # a ValueError that is also a RuntimeError, as Horovod's tests expect
        raise RisemlValueError("riseml: reducescatter does not support op=Adasum")
    return op


def _check_scatterable(tensors):
    for t in tensors:
        if t.dim() == 0:
            raise ValueError("riseml: reducescatter needs at least one dimension, got a scalar")


def _reducescatter_on_gpu(tensors, name, op, prescale_factor, postscale_factor, set_id,
                          members, me):
    """reducescatter of CUDA tensors on their GPU, as one engine operation: packed rank-major on
    the device, scaled in the tensor's own type (as Horovod's GPU reducescatter), one NCCL
    reduce-scatter, this rank's rows unpacked into tensors of their own (stream-ordered)."""
    _check_scatterable(tensors)
    views = _one_device_views(tensors, "reducescatter")
    srcs = [v[0] for v in views]
    outs = [_torch.empty((_riseml.reducescatter_rows(s.shape[0], members, me),) +
                         tuple(s.shape[1:]), dtype=s.dtype, device=s.device) for s in srcs]
    _, dtype, device, stream = views[0]
    h = _riseml.device_reducescatter_async([s.data_ptr() for s in srcs],
                                           [o.data_ptr() for o in outs],
                                           [list(s.shape) for s in srcs], dtype, device, stream,
                                           name, op, prescale_factor, postscale_factor, set_id)
    _handles[h] = ("reducescatter-gpu", (outs, srcs))
    return h


def grouped_reducescatter_async(tensors, name=None, op=None, prescale_factor=1.0,
                                postscale_factor=1.0, process_set=global_process_set):
    """Starts a reducescatter of each tensor, as one operation."""
    op = _scatter_op(op)
    set_id = _check_process_set(process_set)
    ps = process_set if process_set is not None else global_process_set
    members, me = ps.size(), ps.rank()
    _check_one_kind(tensors, "grouped_reducescatter")
    if tensors and all([_on_gpu(t, reduction=True) for t in tensors]):
        return _reducescatter_on_gpu(tensors, _common._name("reducescatter", name, process_set),
                                     op, prescale_factor, postscale_factor, set_id, members, me)
    views = [_cpu_view(t) for t in tensors]
    dtypes = {v[2] for v in views}
    if len(dtypes) > 1 or len({t.dtype for t in tensors}) > 1:
        raise ValueError("riseml: grouped_reducescatter needs tensors of one dtype")
    srcs, dsts, dst_cpus = [], [], []
    for src, src_cpu, dtype in views:
        if src_cpu.dim() == 0:
            raise ValueError("riseml: reducescatter needs at least one dimension, got a scalar")
        rows = _riseml.reducescatter_rows(src_cpu.shape[0], members, me)
        dst_cpu = _torch.empty((rows,) + tuple(src_cpu.shape[1:]), dtype=src_cpu.dtype)
        srcs.append(src)
        dsts.append(_numpy_of(dst_cpu, dtype))
        dst_cpus.append(dst_cpu)
    name = _common._name("reducescatter", name, process_set)
    h = _riseml.reducescatter_async(srcs, dsts, name, op,
                                    prescale_factor, postscale_factor,
                                    dtypes.pop() if dtypes else "", set_id)
    _handles[h] = ("reducescatter", (list(tensors), dst_cpus))
    return h


def reducescatter_async(tensor, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                        process_set=global_process_set):
    h = grouped_reducescatter_async([tensor], name, op, prescale_factor, postscale_factor,
                                    process_set)
    kind, entry = _handles[h]
    _handles[h] = (kind + "-one", entry)
    return h


class _ReducescatterFunction(_torch.autograd.Function):
    """reducescatter with gradients, as Horovod: the output gradients gathered, times the set's
    size for Sum (Average: as gathered)."""

    @staticmethod
    def forward(ctx, name, op, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.op, ctx.process_set = op, process_set
        return tuple(synchronize(grouped_reducescatter_async(
            list(tensors), name, op, prescale_factor, postscale_factor, process_set)))

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = synchronize(grouped_allgather_async([g.contiguous() for g in grad_outputs],
                                                    None, ctx.process_set))
        if ctx.op == Sum:
            members = (ctx.process_set or global_process_set).size()
            grads = [g * members for g in grads]
        return (None, None, None, None, None) + tuple(grads)


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=None,
                          prescale_factor=1.0, postscale_factor=1.0,
                          process_set=global_process_set):
    """reducescatter of each tensor, as one operation. Differentiable."""
    op = _scatter_op(op)
    name = _common._name("grouped_reducescatter", name, process_set)
    pairs = [compression.compress(t) for t in tensors]
    compressed = [p[0] for p in pairs]
    if any(_differentiable(t) for t in compressed):
        outs = _ReducescatterFunction.apply(name, op, prescale_factor, postscale_factor,
                                            process_set, *compressed)
    else:
        outs = synchronize(grouped_reducescatter_async(compressed, name, op, prescale_factor,
                                                       postscale_factor, process_set))
    return [compression.decompress(o, p[1]) for o, p in zip(outs, pairs)]


def reducescatter(tensor, name=None, compression=Compression.none, op=None,
                  prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Reduces `tensor` over the ranks (default: average) and returns this rank's rows of the
    first dimension: the rows are dealt in rank order, the first rows % size ranks getting one
    more. Differentiable."""
    return grouped_reducescatter([tensor], name, compression, op, prescale_factor,
                                 postscale_factor, process_set)[0]


# --------------------------------------------------------------------------------- synchronize

def _deliver(output, cpu):
    if cpu is not output and not _shares_memory(output, cpu):
        with _torch.no_grad():
            output.copy_(cpu)
    return output


def _from_engine(array, like):
    """A tensor on `like`'s device from an engine result array."""
    result = _torch.from_numpy(array)
    if like.dtype == _torch.bfloat16:
        result = result.view(_torch.bfloat16)
    return result.to(like.device)


def _take_device_results(handle, shapes, likes):
    """A device allgather's or alltoall's outputs, which wait in the engine's device buffer, in
    new tensors of `shapes` like `likes`; the copies run on torch's stream, after whatever made
    the allocations free."""
    try:
        results = [_torch.empty(s, dtype=t.dtype, device=t.device) for s, t in zip(shapes, likes)]
    except BaseException:
        _riseml.copy_device_result(handle, [])  # drop it
        raise
    _riseml.copy_device_result(handle, [r.data_ptr() for r in results],
                               _torch.cuda.current_stream(likes[0].device).cuda_stream)
    return results


def synchronize(handle):
    """Waits (releasing the GIL) and returns the operation's output tensor(s)."""
    if isinstance(handle, _SparseHandle):
        return handle()
    try:
        gathered = _riseml.synchronize(handle)
    finally:
        entry = _handles.pop(handle, None)
    if entry is None:
        return None
    output, cpu = entry[0], entry[1]
    if isinstance(output, str):
        if output == "allgather-gpu":  # `gathered`: its shape, in a list
            return _take_device_results(handle, gathered, [cpu])[0]
        if output == "grouped_allgather-gpu":  # `gathered`: the shapes
            return _take_device_results(handle, gathered, cpu)
        if output == "alltoall-gpu":
            (shape, received), (src, splits_device) = gathered, cpu
            return (_take_device_results(handle, [shape], [src])[0],
                    _torch.tensor(received, dtype=_torch.int32, device=splits_device))
        if output == "allgather":
            return _from_engine(gathered, cpu)
        if output == "grouped_allgather":
            return [_from_engine(a, t) for a, t in zip(gathered, cpu)]
        if output == "alltoall":
            array, received = gathered
            tensor, splits_device = cpu
            return (_from_engine(array, tensor),
                    _torch.tensor(received, dtype=_torch.int32, device=splits_device))
        if output in ("reducescatter", "reducescatter-one"):
            tensors, dst_cpus = cpu
            outs = [d.to(t.device) for d, t in zip(dst_cpus, tensors)]
            return outs[0] if output == "reducescatter-one" else outs
        if output == "reducescatter-gpu":
            return cpu[0]  # this rank's rows, written on the engine's stream (torch's waits)
    if isinstance(output, list):
        return [_deliver(o, c) for o, c in zip(output, cpu)]
    return _deliver(output, cpu)


def poll(handle):
    """True once the operation completed (never blocks)."""
    if isinstance(handle, _SparseHandle):
        return True
    return _riseml.poll(handle)


# Horovod's hvd.elastic (TorchState, ElasticSampler, run); last, as it uses the functions above.
from riseml.torch import elastic  # noqa: E402
