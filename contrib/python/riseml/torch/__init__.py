"""riseml.torch: Horovod's torch API over the riseml engine.

    import riseml.torch as hvd
    hvd.init()
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)

CPU tensors are reduced in place in their own memory (a numpy view, no copy). CUDA tensors are
reduced where they lie, with NCCL, ordered after the work already on torch's current stream, when
this build has GPU support (riseml.torch.gpu_status()); otherwise they go through a CPU copy,
with a warning once.
"""
import warnings as _warnings

import torch as _torch

import _riseml
import riseml as _common
from riseml import (Average, Max, Min, Product, RisemlError, Sum, barrier, cross_rank,
                    cross_size, init, is_initialized, join, local_rank, local_size, poll, rank,
                    shutdown, size)
from riseml.torch.compression import Compression
from riseml.torch.functions import (allgather_object, broadcast_object, broadcast_optimizer_state,
                                    broadcast_parameters)
from riseml.torch.optimizer import DistributedOptimizer

__all__ = [
    "Average", "Sum", "Min", "Max", "Product", "RisemlError", "Compression",
    "init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank",
    "cross_size", "cross_rank", "allreduce", "allreduce_", "allreduce_async", "allreduce_async_",
    "grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async",
    "grouped_allreduce_async_", "allgather", "allgather_async", "broadcast", "broadcast_",
    "broadcast_async", "broadcast_async_", "broadcast_parameters", "broadcast_optimizer_state",
    "broadcast_object", "allgather_object", "synchronize", "poll", "join", "barrier",
    "DistributedOptimizer", "gpu_status",
]

# handle -> (tensor returned by synchronize, the buffer the engine writes the result into
#            [, tensors kept alive until then])
_handles = {}

_GPU_BUILT, _GPU_USABLE, _GPU_STATUS = _riseml.gpu_status()
_warned_host_copy = False

_DTYPE_NAMES = {
    _torch.float32: "float32", _torch.float64: "float64", _torch.float16: "float16",
    _torch.bfloat16: "bfloat16", _torch.int32: "int32", _torch.int64: "int64",
    _torch.uint8: "uint8",
}


def gpu_status():
    """(built with GPU support, a CUDA device usable, one line saying which)."""
    return _GPU_BUILT, _GPU_USABLE, _GPU_STATUS


def _on_gpu(tensor):
    """True: reduce `tensor` on its GPU with NCCL. False: on the CPU (host tensors; CUDA tensors
    when this build or process cannot use the GPU, with a warning once)."""
    if tensor.device.type != "cuda":
        return False
    if _GPU_BUILT and _GPU_USABLE:
        return True
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
        raise TypeError("riseml: unsupported dtype %s (float16/32/64, bfloat16, int32/64, "
                        "uint8)" % t.dtype)
    device = t.device.index if t.device.index is not None else _torch.cuda.current_device()
    return t, name, device, _torch.cuda.current_stream(t.device).cuda_stream


def _cpu_view(tensor):
    """(numpy view the engine may read and write, the CPU tensor behind it, dtype override)."""
    t = tensor.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if not t.is_contiguous():
        t = t.contiguous()
    if t.dtype == _torch.bfloat16:
        return t.view(_torch.int16).numpy(), t, "bfloat16"
    if t.dtype == _torch.bool:
        raise TypeError("riseml: bool tensors are not supported; convert to uint8")
    return t.numpy(), t, ""


def _shares_memory(a, b):
    return a.data_ptr() == b.data_ptr() and a.device == b.device


def _allreduce_into(tensor, output, name, op, prescale_factor, postscale_factor):
    if _on_gpu(tensor):
        return _grouped_on_gpu([tensor], [output], name, op, prescale_factor, postscale_factor,
                               single=True)
    src, src_cpu, dtype = _cpu_view(tensor)
    if output is tensor and _shares_memory(src_cpu, tensor):
        dst, dst_cpu = src, src_cpu  # in place, no copy
    else:
        dst_cpu = _torch.empty_like(src_cpu)
        dst = dst_cpu.view(_torch.int16).numpy() if dtype else dst_cpu.numpy()
    h = _riseml.allreduce_async(src, dst, name, op, prescale_factor, postscale_factor, dtype)
    _handles[h] = (output, dst_cpu)
    return h


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0):
    op = _common._resolve_op(op, average)
    output = _torch.empty_like(tensor)
    return _allreduce_into(tensor, output, _common._name("allreduce", name), op,
                           prescale_factor, postscale_factor)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0):
    op = _common._resolve_op(op, average)
    return _allreduce_into(tensor, tensor, _common._name("allreduce", name), op,
                           prescale_factor, postscale_factor)


def _differentiable(tensor):
    return tensor.requires_grad and _torch.is_grad_enabled()


class _AllreduceFunction(_torch.autograd.Function):
    """allreduce with a gradient: the same reduction of the output gradients (as Horovod)."""

    @staticmethod
    def forward(ctx, tensor, name, op, prescale_factor, postscale_factor):
        ctx.op, ctx.scales = op, (prescale_factor, postscale_factor)
        return synchronize(allreduce_async(tensor, None, name, op, prescale_factor,
                                           postscale_factor))

    @staticmethod
    def backward(ctx, grad_output):
        grad = synchronize(allreduce_async(grad_output, None, None, ctx.op, *ctx.scales))
        return grad, None, None, None, None


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0):
    """A new tensor: the reduction of `tensor` over all ranks (default: average).
    Differentiable: the gradient is the same reduction of the output gradients."""
    op = _common._resolve_op(op, average)
    compressed, ctx = compression.compress(tensor)
    if _differentiable(compressed):
        out = _AllreduceFunction.apply(compressed, _common._name("allreduce", name), op,
                                       prescale_factor, postscale_factor)
    else:
        out = synchronize(allreduce_async(compressed, None, name, op, prescale_factor,
                                          postscale_factor))
    return compression.decompress(out, ctx)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0):
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor,
                                        postscale_factor))


def _grouped_on_gpu(tensors, outputs, name, op, prescale_factor, postscale_factor,
                    single=False):
    views = [_device_view(t) for t in tensors]
    if len({(v[1], v[2]) for v in views}) != 1:
        raise ValueError("riseml: grouped_allreduce needs tensors of one dtype on one device")
    srcs, dsts = [], []
    for (src, _, _, _), t, out in zip(views, tensors, outputs):
        dst = src if out is t and _shares_memory(src, t) else _torch.empty_like(src)
        srcs.append(src)
        dsts.append(dst)
    _, dtype, device, stream = views[0]
    h = _riseml.device_allreduce_async([s.data_ptr() for s in srcs], [d.data_ptr() for d in dsts],
                                       [list(s.shape) for s in srcs], dtype, device, stream,
                                       name, op, prescale_factor, postscale_factor)
    if single:
        _handles[h] = (outputs[0], dsts[0], srcs)
    else:
        _handles[h] = (list(outputs), dsts, srcs)
    return h


def _grouped(tensors, outputs, name, op, prescale_factor, postscale_factor):
    on_gpu = [_on_gpu(t) for t in tensors]
    if tensors and all(on_gpu):
        return _grouped_on_gpu(tensors, outputs, name, op, prescale_factor, postscale_factor)
    if any(on_gpu):
        raise ValueError("riseml: grouped_allreduce got CUDA and CPU tensors; pass one kind")
    views = [_cpu_view(t) for t in tensors]
    dtypes = {v[2] for v in views}
    srcs, dsts, dst_cpus = [], [], []
    for (src, src_cpu, dtype), t, out in zip(views, tensors, outputs):
        if out is t and _shares_memory(src_cpu, t):
            dst, dst_cpu = src, src_cpu
        else:
            dst_cpu = _torch.empty_like(src_cpu)
            dst = dst_cpu.view(_torch.int16).numpy() if dtype else dst_cpu.numpy()
        srcs.append(src)
        dsts.append(dst)
        dst_cpus.append(dst_cpu)
    h = _riseml.grouped_allreduce_async(srcs, dsts, name, op, prescale_factor, postscale_factor,
                                        dtypes.pop() if len(dtypes) == 1 else "")
    _handles[h] = (list(outputs), dst_cpus)
    return h


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0):
    op = _common._resolve_op(op, average)
    return _grouped(tensors, [_torch.empty_like(t) for t in tensors],
                    _common._name("grouped_allreduce", name), op, prescale_factor,
                    postscale_factor)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0):
    op = _common._resolve_op(op, average)
    return _grouped(tensors, list(tensors), _common._name("grouped_allreduce", name), op,
                    prescale_factor, postscale_factor)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0):
    """Reduces the tensors as one unit (ready, fused and completed together)."""
    pairs = [compression.compress(t) for t in tensors]
    outs = synchronize(grouped_allreduce_async([p[0] for p in pairs], average, name, op,
                                               prescale_factor, postscale_factor))
    return [compression.decompress(o, p[1]) for o, p in zip(outs, pairs)]


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0):
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                                postscale_factor))


def allgather_async(tensor, name=None):
    if _on_gpu(tensor):
        src, dtype, device, stream = _device_view(tensor)
        h = _riseml.device_allgather_async(src.data_ptr(), list(src.shape), dtype, device, stream,
                                           _common._name("allgather", name))
        _handles[h] = ("allgather-gpu", src)
        return h
    src, src_cpu, dtype = _cpu_view(tensor)
    h = _riseml.allgather_async(src, _common._name("allgather", name), dtype)
    _handles[h] = ("allgather", tensor)
    return h


class _AllgatherFunction(_torch.autograd.Function):
    """allgather with a gradient: this rank's rows of the summed output gradients."""

    @staticmethod
    def forward(ctx, tensor, name):
        ctx.rows = synchronize(allgather_async(
            _torch.tensor([tensor.shape[0]], dtype=_torch.int64), name + ".rows")).tolist()
        return synchronize(allgather_async(tensor, name))

    @staticmethod
    def backward(ctx, grad_output):
        grad = synchronize(allreduce_async(grad_output, None, None, Sum))
        offset = sum(ctx.rows[:rank()])
        return grad.narrow(0, offset, ctx.rows[rank()]), None


def allgather(tensor, name=None):
    """Every rank's tensor concatenated along the first dimension (which may differ).
    Differentiable: each rank gets its rows of the summed output gradients."""
    if _differentiable(tensor):
        return _AllgatherFunction.apply(tensor, _common._name("allgather", name))
    return synchronize(allgather_async(tensor, name))


def _broadcast_into(tensor, output, root_rank, name):
    if _on_gpu(tensor):
        src, dtype, device, stream = _device_view(tensor)
        dst = src if output is tensor and _shares_memory(src, tensor) else _torch.empty_like(src)
        h = _riseml.device_broadcast_async(src.data_ptr(), dst.data_ptr(), list(src.shape), dtype,
                                           device, stream, root_rank, name)
        _handles[h] = (output, dst, src)
        return h
    src, src_cpu, dtype = _cpu_view(tensor)
    if output is tensor and _shares_memory(src_cpu, tensor):
        dst, dst_cpu = src, src_cpu
    else:
        dst_cpu = _torch.empty_like(src_cpu)
        dst = dst_cpu.view(_torch.int16).numpy() if dtype else dst_cpu.numpy()
    h = _riseml.broadcast_async(src, dst, root_rank, name, dtype)
    _handles[h] = (output, dst_cpu)
    return h


def broadcast_async(tensor, root_rank, name=None):
    return _broadcast_into(tensor, _torch.empty_like(tensor), root_rank,
                           _common._name("broadcast", name))


def broadcast_async_(tensor, root_rank, name=None):
    return _broadcast_into(tensor, tensor, root_rank, _common._name("broadcast", name))


class _BroadcastFunction(_torch.autograd.Function):
    """broadcast with a gradient: the root gets the sum of the output gradients, others 0."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name):
        ctx.root_rank = root_rank
        return synchronize(broadcast_async(tensor, root_rank, name))

    @staticmethod
    def backward(ctx, grad_output):
        grad = synchronize(allreduce_async(grad_output, None, None, Sum))
        if rank() != ctx.root_rank:
            grad = grad * 0
        return grad, None, None


def broadcast(tensor, root_rank, name=None):
    """A new tensor: `root_rank`'s tensor, on every rank. Differentiable."""
    if _differentiable(tensor):
        return _BroadcastFunction.apply(tensor, root_rank, _common._name("broadcast", name))
    return synchronize(broadcast_async(tensor, root_rank, name))


def broadcast_(tensor, root_rank, name=None):
    return synchronize(broadcast_async_(tensor, root_rank, name))


def _deliver(output, cpu):
    if not _shares_memory(output, cpu):
        with _torch.no_grad():
            output.copy_(cpu)
    return output


def synchronize(handle):
    """Waits (releasing the GIL) and returns the operation's output tensor(s)."""
    try:
        gathered = _riseml.synchronize(handle)
    finally:
        entry = _handles.pop(handle, None)
    if entry is None:
        return None
    output, cpu = entry[0], entry[1]
    if isinstance(output, str) and output == "allgather-gpu":
        # `gathered` is the shape; the rows wait in the engine's device buffer. The copy runs
        # on torch's stream, after whatever made the allocation free.
        try:
            result = _torch.empty(gathered, dtype=cpu.dtype, device=cpu.device)
        except BaseException:
            _riseml.copy_device_result(handle, 0)  # drop it
            raise
        _riseml.copy_device_result(handle, result.data_ptr(),
                                   _torch.cuda.current_stream(cpu.device).cuda_stream)
        return result
    if isinstance(output, str):  # allgather
        result = _torch.from_numpy(gathered)
        if cpu.dtype == _torch.bfloat16:
            result = result.view(_torch.bfloat16)
        return result.to(cpu.device)
    if isinstance(output, list):
        return [_deliver(o, c) for o, c in zip(output, cpu)]
    return _deliver(output, cpu)
