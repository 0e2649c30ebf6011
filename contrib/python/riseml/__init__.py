"""riseml: synchronous data-parallel collectives with Horovod's API, for numpy arrays.

    import riseml as hvd
    hvd.init()
    total = hvd.allreduce(np.ones(3), op=hvd.Sum)

``riseml.torch`` offers the same for torch tensors plus DistributedOptimizer. Every collective
is negotiated by name between the ranks by a background engine (see docs/python.md).
"""
import atexit as _atexit
import itertools as _itertools
import pickle as _pickle

import numpy as _np

import _riseml

RisemlError = _riseml.RisemlError
RisemlError.__module__ = "riseml"

# Reduce operations (Horovod's names).
Sum = _riseml.SUM
Average = _riseml.AVERAGE
Min = _riseml.MIN
Max = _riseml.MAX
Product = _riseml.PRODUCT

_counters = {}


def _name(kind, name):
    """An explicit name, or the next automatic one: the same sequence on every rank as long as
    the ranks call the collectives in the same order (Horovod's rule)."""
    if name is not None:
        return str(name)
    counter = _counters.setdefault(kind, _itertools.count())
    return "%s.noname.%d" % (kind, next(counter))


def _resolve_op(op, average):
    if op is not None and average is not None:
        raise ValueError("riseml: pass either op or average, not both")
    if average is not None:
        return Average if average else Sum
    return Average if op is None else op


def init():
    """Joins the job (PMIx: srun --mpi=pmix, mpirun, riseml-launch; alone: rank 0 of 1) and
    starts the engine. Collective; a second call does nothing."""
    _riseml.init()


def shutdown():
    """Stops the engine on every rank (pending operations fail)."""
    _riseml.shutdown()


_atexit.register(shutdown)

is_initialized = _riseml.is_initialized
rank = _riseml.rank
size = _riseml.size
local_rank = _riseml.local_rank
local_size = _riseml.local_size
cross_rank = _riseml.cross_rank
cross_size = _riseml.cross_size
poll = _riseml.poll
barrier = _riseml.barrier


def join(device=-1):
    """This rank is done: others go on (with zeros from it) until every rank joined. Returns
    the last rank that joined. `device` is accepted for Horovod compatibility and ignored."""
    del device
    return _riseml.join()


def _contiguous(a):
    a = _np.asarray(a)
    return a if a.flags.c_contiguous else _np.ascontiguousarray(a)


def allreduce_async(array, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0):
    a = _contiguous(array)
    out = _np.empty_like(a)
    h = _riseml.allreduce_async(a, out, _name("allreduce", name), _resolve_op(op, average),
                                prescale_factor, postscale_factor)
    _results[h] = out
    return h


def allreduce_async_(array, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0):
    """In place: `array` must be a writable C-contiguous numpy array."""
    if not isinstance(array, _np.ndarray) or not array.flags.c_contiguous:
        raise ValueError("riseml: allreduce_ needs a C-contiguous numpy array")
    h = _riseml.allreduce_async(array, array, _name("allreduce", name), _resolve_op(op, average),
                                prescale_factor, postscale_factor)
    _results[h] = array
    return h


def allreduce(array, average=None, name=None, op=None, prescale_factor=1.0,
              postscale_factor=1.0):
    return synchronize(allreduce_async(array, average, name, op, prescale_factor,
                                       postscale_factor))


def allreduce_(array, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0):
    return synchronize(allreduce_async_(array, average, name, op, prescale_factor,
                                        postscale_factor))


def grouped_allreduce_async(arrays, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0):
    ins = [_contiguous(a) for a in arrays]
    outs = [_np.empty_like(a) for a in ins]
    h = _riseml.grouped_allreduce_async(ins, outs, _name("grouped_allreduce", name),
                                        _resolve_op(op, average), prescale_factor,
                                        postscale_factor)
    _results[h] = outs
    return h


def grouped_allreduce(arrays, average=None, name=None, op=None, prescale_factor=1.0,
                      postscale_factor=1.0):
    return synchronize(grouped_allreduce_async(arrays, average, name, op, prescale_factor,
                                               postscale_factor))


def allgather_async(array, name=None):
    return _riseml.allgather_async(_contiguous(array), _name("allgather", name))


def allgather(array, name=None):
    """Concatenates every rank's array along the first dimension (which may differ)."""
    return synchronize(allgather_async(array, name))


def broadcast_async(array, root_rank, name=None):
    a = _contiguous(array)
    out = _np.empty_like(a)
    h = _riseml.broadcast_async(a, out, root_rank, _name("broadcast", name))
    _results[h] = out
    return h


def broadcast_async_(array, root_rank, name=None):
    if not isinstance(array, _np.ndarray) or not array.flags.c_contiguous:
        raise ValueError("riseml: broadcast_ needs a C-contiguous numpy array")
    h = _riseml.broadcast_async(array, array, root_rank, _name("broadcast", name))
    _results[h] = array
    return h


def broadcast(array, root_rank, name=None):
    return synchronize(broadcast_async(array, root_rank, name))


def broadcast_(array, root_rank, name=None):
    return synchronize(broadcast_async_(array, root_rank, name))


_results = {}


def synchronize(handle):
    """Waits for an async operation (releasing the GIL) and returns its result."""
    try:
        gathered = _riseml.synchronize(handle)
    finally:
        result = _results.pop(handle, None)
    return gathered if gathered is not None else result


def broadcast_object(obj, root_rank=0, name=None):
    """The (pickled) object of `root_rank`, on every rank."""
    name = _name("broadcast_object", name)
    payload = _np.frombuffer(_pickle.dumps(obj), dtype=_np.uint8) if rank() == root_rank else None
    length = _np.array([0 if payload is None else payload.size], dtype=_np.int64)
    broadcast_(length, root_rank, name + ".length")
    buf = payload.copy() if payload is not None else _np.empty(int(length[0]), dtype=_np.uint8)
    broadcast_(buf, root_rank, name + ".data")
    return _pickle.loads(buf.tobytes())


def allgather_object(obj, name=None):
    """A list of every rank's (pickled) object, in rank order."""
    name = _name("allgather_object", name)
    payload = _np.frombuffer(_pickle.dumps(obj), dtype=_np.uint8)
    lengths = allgather(_np.array([payload.size], dtype=_np.int64), name + ".lengths")
    data = allgather(payload, name + ".data")
    out, offset = [], 0
    for n in lengths:
        out.append(_pickle.loads(data[offset:offset + int(n)].tobytes()))
        offset += int(n)
    return out
