"""riseml.torch: Horovod's torch API over the riseml engine.

    import riseml.torch as hvd
    hvd.init()
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)

CPU tensors are reduced in place in their own memory (a numpy view, no copy); other devices go
through a CPU copy.
"""
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
    "DistributedOptimizer",
]

# handle -> (tensor returned by synchronize, tensor to copy the CPU result into or None,
#            the CPU buffer the engine works on)
_handles = {}


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


def _grouped(tensors, outputs, name, op, prescale_factor, postscale_factor):
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
    output, cpu = entry
    if isinstance(output, str):  # allgather
        result = _torch.from_numpy(gathered)
        if cpu.dtype == _torch.bfloat16:
            result = result.view(_torch.bfloat16)
        return result.to(cpu.device)
    if isinstance(output, list):
        return [_deliver(o, c) for o, c in zip(output, cpu)]
    return _deliver(output, cpu)
