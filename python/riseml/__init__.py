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
from riseml.process_sets import (ProcessSet, add_process_set, global_process_set,  # noqa: F401
                                 remove_process_set)
from riseml import process_sets as _process_sets

# Errors. RisemlError is a RuntimeError; errors in what the caller passed are RisemlValueError,
# also a ValueError. Horovod's names for the same classes:
RisemlError = _riseml.RisemlError
RisemlError.__module__ = "riseml"
RisemlValueError = _riseml.RisemlValueError
RisemlValueError.__module__ = "riseml"
HorovodInternalError = RisemlError


class HostsUpdatedInterrupt(RuntimeError):
    """Horovod elastic's signal that the hosts changed: raised by State.commit() or
    check_host_updates() on every rank at once after a host update (riseml.elastic); the
    elastic run wrapper catches it and re-forms the world. `skip_sync`: only hosts were removed,
    so the survivors' state needs no sync."""

    def __init__(self, skip_sync=False):
        super().__init__("hosts updated")
        self.skip_sync = skip_sync


# Reduce operations (Horovod's names).
Sum = _riseml.SUM
Average = _riseml.AVERAGE
Min = _riseml.MIN
Max = _riseml.MAX
Product = _riseml.PRODUCT
Adasum = _riseml.ADASUM

_counters = {}


def _name(kind, name, process_set=None):
    """An explicit name, or the next automatic one: the same sequence on every rank as long as
    the ranks call the collectives in the same order (Horovod's rule). Each process set counts
    on its own, so collectives within a set leave the job's sequence alone."""
    if name is not None:
        return str(name)
    set_id = process_set.process_set_id if process_set is not None else 0
    key = kind if not set_id else "%s.ps%s" % (kind, set_id)
    counter = _counters.setdefault(key, _itertools.count())
    return "%s.noname.%d" % (key, next(counter))


def _resolve_op(op, average):
    if op is not None and average is not None:
        raise ValueError("riseml: pass either op or average, not both")
    if average is not None:
        return Average if average else Sum
    return Average if op is None else op


def init(comm=None, process_sets=None):
    """Joins the job (PMIx: srun --mpi=pmix, mpirun, riseml-launch; alone: rank 0 of 1) and
    starts the engine. Collective; a second call does nothing; init() after shutdown() starts
    again. `process_sets`: ProcessSets (or rank lists) to add at once, or "dynamic" (Horovod's
    word; sets can always be added later here). `comm` (an mpi4py communicator or rank list in
    Horovod) must be None or all ranks: riseml always spans the whole job."""
    if comm is not None and not (isinstance(comm, (list, tuple)) and
                                 (len(comm) == 0 or list(comm) == list(range(len(comm))))):
        raise ValueError("riseml: init(comm=...) is not supported: the engine spans the whole "
                         "job; use process sets for subsets of the ranks")
    first = not _riseml.is_initialized()
    _riseml.init()
    if first:
        _process_sets._setup(process_sets)


def _init_elastic(after_failure=False):
    """init() for hvd.elastic's reset: after a failure that blamed a rank (dead or silent), the
    survivors re-form the world without it, numbered anew (rank 0 is the lowest survivor).
    Under riseml-elastic the driver decides the next world (`after_failure`: this reset follows
    a collective failure, which the driver hears of)."""
    _riseml.init(elastic=True, after_failure=after_failure)
    # Unnamed operations are named by counters; a new world starts them anew on every member,
    # a worker that joins it included (its counters never ran).
    _counters.clear()
    _process_sets._setup(None)


def shutdown():
    """Stops the engines on every rank (pending operations fail). init() may follow."""
    _riseml.shutdown()
    _process_sets._reset()


def _finalize():
    _process_sets._reset()
    _riseml.finalize()


_atexit.register(_finalize)


# What this build has: truthful answers to Horovod's capability queries. riseml's own
# collectives run on shared memory and TCP (no MPI, Gloo, oneCCL or DDL), and on NCCL for
# CUDA tensors when built with it.
def _gpu_built():
    return bool(_riseml.gpu_status()[0])


def mpi_built():
    return False


def mpi_enabled():
    return False


def mpi_threads_supported():
    return False


def gloo_built():
    return False


def gloo_enabled():
    return False


def nccl_built():
    """NCCL's version code (e.g. 22809) when built with NCCL, else 0 (as Horovod)."""
    return _riseml.nccl_version()


def ccl_built():
    return False


def ddl_built():
    return False


def cuda_built():
    return _gpu_built()


def rocm_built():
    return False


def start_timeline(file_path, mark_cycles=False):
    """Starts writing the timeline (rank 0) to `file_path`; with HOROVOD_TIMELINE=DYNAMIC or
    later. `mark_cycles` is accepted and ignored."""
    del mark_cycles
    _riseml.start_timeline(str(file_path))


def stop_timeline():
    """Stops the timeline and closes its file."""
    _riseml.stop_timeline()

is_initialized = _riseml.is_initialized
rank = _riseml.rank
size = _riseml.size
local_rank = _riseml.local_rank
local_size = _riseml.local_size
cross_rank = _riseml.cross_rank
cross_size = _riseml.cross_size
poll = _riseml.poll


def barrier(process_set=global_process_set):
    """Blocks until every rank of `process_set` reached it."""
    _riseml.barrier(_process_sets._id(process_set))


def join(device=-1):
    """This rank is done: others go on (with zeros from it) until every rank joined. Returns
    the last rank that joined. `device` is accepted for Horovod compatibility and ignored."""
    del device
    return _riseml.join()


def _contiguous(a):
    a = _np.asarray(a)
    return a if a.flags.c_contiguous else _np.ascontiguousarray(a)


def _ps(process_set):
    return _process_sets._id(process_set)


def _root(root_rank, process_set):
    """A broadcast's root as the engine of `process_set` numbers it: Horovod names the root by
    its rank in the job."""
    set_id = _ps(process_set)
    if set_id == 0:
        return root_rank
    if root_rank not in process_set.ranks:
        raise ValueError("riseml: broadcast root rank %s is not in %s" % (root_rank, process_set))
    return process_set.ranks.index(root_rank)


_results = {}


def allreduce_async(array, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    a = _contiguous(array)
    out = _np.empty_like(a)
    name = _name("allreduce", name, process_set)
    h = _riseml.allreduce_async(a, out, name, _resolve_op(op, average),
                                prescale_factor, postscale_factor, process_set=_ps(process_set))
    _results[h] = out
    return h


def allreduce_async_(array, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    """In place: `array` must be a writable C-contiguous numpy array."""
    if not isinstance(array, _np.ndarray) or not array.flags.c_contiguous:
        raise ValueError("riseml: allreduce_ needs a C-contiguous numpy array")
    name = _name("allreduce", name, process_set)
    h = _riseml.allreduce_async(array, array, name, _resolve_op(op, average),
                                prescale_factor, postscale_factor, process_set=_ps(process_set))
    _results[h] = array
    return h


def allreduce(array, average=None, name=None, op=None, prescale_factor=1.0,
              postscale_factor=1.0, process_set=global_process_set):
    return synchronize(allreduce_async(array, average, name, op, prescale_factor,
                                       postscale_factor, process_set))


def allreduce_(array, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    return synchronize(allreduce_async_(array, average, name, op, prescale_factor,
                                        postscale_factor, process_set))


def grouped_allreduce_async(arrays, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    ins = [_contiguous(a) for a in arrays]
    outs = [_np.empty_like(a) for a in ins]
    h = _riseml.grouped_allreduce_async(ins, outs, _name("grouped_allreduce", name, process_set),
                                        _resolve_op(op, average), prescale_factor,
                                        postscale_factor, process_set=_ps(process_set))
    _results[h] = outs
    return h


def grouped_allreduce(arrays, average=None, name=None, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set):
    return synchronize(grouped_allreduce_async(arrays, average, name, op, prescale_factor,
                                               postscale_factor, process_set))


def allgather_async(array, name=None, process_set=global_process_set):
    return _riseml.allgather_async(_contiguous(array), _name("allgather", name, process_set),
                                   process_set=_ps(process_set))


def allgather(array, name=None, process_set=global_process_set):
    """Concatenates every rank's array along the first dimension (which may differ)."""
    return synchronize(allgather_async(array, name, process_set))


def grouped_allgather_async(arrays, name=None, process_set=global_process_set):
    return _riseml.grouped_allgather_async([_contiguous(a) for a in arrays],
                                           _name("grouped_allgather", name, process_set),
                                           process_set=_ps(process_set))


def grouped_allgather(arrays, name=None, process_set=global_process_set):
    """allgather of each array, as one operation: a list of the gathered arrays."""
    return synchronize(grouped_allgather_async(arrays, name, process_set))


def _scatter_rows(rows, process_set):
    ps = process_set if process_set is not None else global_process_set
    return _riseml.reducescatter_rows(rows, ps.size(), ps.rank())


def grouped_reducescatter_async(arrays, name=None, op=None, prescale_factor=1.0,
                                postscale_factor=1.0, process_set=global_process_set):
    op = Average if op is None else op
    ins = [_contiguous(a) for a in arrays]
    for a in ins:
        if a.ndim == 0:
            raise ValueError("riseml: reducescatter needs at least one dimension")
    outs = [_np.empty((_scatter_rows(a.shape[0], process_set),) + a.shape[1:], dtype=a.dtype)
            for a in ins]
    h = _riseml.reducescatter_async(ins, outs, _name("reducescatter", name, process_set), op,
                                    prescale_factor, postscale_factor,
                                    process_set=_ps(process_set))
    _results[h] = outs
    return h


def grouped_reducescatter(arrays, name=None, op=None, prescale_factor=1.0,
                          postscale_factor=1.0, process_set=global_process_set):
    return synchronize(grouped_reducescatter_async(arrays, name, op, prescale_factor,
                                                   postscale_factor, process_set))


def reducescatter_async(array, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                        process_set=global_process_set):
    h = grouped_reducescatter_async([array], name, op, prescale_factor, postscale_factor,
                                    process_set)
    _results[h] = _results[h][0]
    return h


def reducescatter(array, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                  process_set=global_process_set):
    """Reduces the arrays of all ranks (default: average) and returns this rank's rows of the
    first dimension: the rows are dealt in rank order, the first rows % size ranks getting one
    more."""
    return synchronize(reducescatter_async(array, name, op, prescale_factor, postscale_factor,
                                           process_set))


def _splits_list(splits):
    if splits is None:
        return []
    s = _np.asarray(splits)
    if s.ndim != 1 or not _np.issubdtype(s.dtype, _np.integer):
        raise ValueError("riseml: alltoall splits must be a 1-D list of integers")
    return [int(v) for v in s]


def alltoall_async(array, splits=None, name=None, process_set=global_process_set):
    name = _name("alltoall", name, process_set)
    return _riseml.alltoall_async(_contiguous(array), _splits_list(splits), name,
                                  process_set=_ps(process_set))


def alltoall(array, splits=None, name=None, process_set=global_process_set):
    """Sends splits[r] rows of the first dimension to rank r (default: an equal split) and
    returns (the rows received from every rank in rank order, the rows received per rank)."""
    return synchronize(alltoall_async(array, splits, name, process_set))


def broadcast_async(array, root_rank, name=None, process_set=global_process_set):
    a = _contiguous(array)
    out = _np.empty_like(a)
    name = _name("broadcast", name, process_set)
    h = _riseml.broadcast_async(a, out, _root(root_rank, process_set), name,
                                process_set=_ps(process_set))
    _results[h] = out
    return h


def broadcast_async_(array, root_rank, name=None, process_set=global_process_set):
    if not isinstance(array, _np.ndarray) or not array.flags.c_contiguous:
        raise ValueError("riseml: broadcast_ needs a C-contiguous numpy array")
    h = _riseml.broadcast_async(array, array, _root(root_rank, process_set),
                                _name("broadcast", name, process_set), process_set=_ps(process_set))
    _results[h] = array
    return h


def broadcast(array, root_rank, name=None, process_set=global_process_set):
    return synchronize(broadcast_async(array, root_rank, name, process_set))


def broadcast_(array, root_rank, name=None, process_set=global_process_set):
    return synchronize(broadcast_async_(array, root_rank, name, process_set))


def synchronize(handle):
    """Waits for an async operation (releasing the GIL) and returns its result."""
    try:
        gathered = _riseml.synchronize(handle)
    finally:
        result = _results.pop(handle, None)
    return gathered if gathered is not None else result


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """The (pickled) object of `root_rank`, on every rank."""
    name = _name("broadcast_object", name, process_set)
    payload = _np.frombuffer(_pickle.dumps(obj), dtype=_np.uint8) if rank() == root_rank else None
    length = _np.array([0 if payload is None else payload.size], dtype=_np.int64)
    broadcast_(length, root_rank, name + ".length", process_set)
    buf = payload.copy() if payload is not None else _np.empty(int(length[0]), dtype=_np.uint8)
    broadcast_(buf, root_rank, name + ".data", process_set)
    return _pickle.loads(buf.tobytes())


def allgather_object(obj, name=None, process_set=global_process_set):
    """A list of every rank's (pickled) object, in rank order."""
    name = _name("allgather_object", name, process_set)
    payload = _np.frombuffer(_pickle.dumps(obj), dtype=_np.uint8)
    lengths = allgather(_np.array([payload.size], dtype=_np.int64), name + ".lengths",
                        process_set)
    data = allgather(payload, name + ".data", process_set)
    out, offset = [], 0
    for n in lengths:
        out.append(_pickle.loads(data[offset:offset + int(n)].tobytes()))
        offset += int(n)
    return out
