"""The numpy API of riseml on every rank: run alone and under riseml-launch -n 2 / -n 4."""
import os
import sys
import threading

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402
import riseml as hvd  # noqa: E402


def test_facts():
    assert hvd.is_initialized()
    assert 0 <= hvd.rank() < hvd.size()
    assert 0 <= hvd.local_rank() < hvd.local_size() <= hvd.size()
    assert 0 <= hvd.cross_rank() < hvd.cross_size()
    hvd.init()  # a second init is harmless


def test_allreduce_ops():
    n, r = hvd.size(), hvd.rank()
    x = np.full(5, r + 1, dtype=np.float32)
    assert np.all(hvd.allreduce(x, op=hvd.Sum) == n * (n + 1) / 2)
    assert np.all(x == r + 1)  # not in place
    assert np.allclose(hvd.allreduce(x), (n + 1) / 2)  # default: average
    assert np.allclose(hvd.allreduce(x, average=True), (n + 1) / 2)
    assert np.all(hvd.allreduce(x, op=hvd.Min) == 1)
    assert np.all(hvd.allreduce(x, op=hvd.Max) == n)
    i = np.full((2, 3), r, dtype=np.int64)
    assert np.all(hvd.allreduce(i, op=hvd.Sum) == n * (n - 1) // 2)
    h = np.full(4, 1.0, dtype=np.float16)
    assert np.all(hvd.allreduce(h, op=hvd.Sum) == n)
    d = np.ones(3)
    out = hvd.allreduce(d, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.25)
    assert np.allclose(out, n * 0.5), out


def test_allreduce_in_place_and_async():
    n = hvd.size()
    x = np.ones(1000, dtype=np.float64)
    y = hvd.allreduce_(x, op=hvd.Sum)
    assert y is x and np.all(x == n)
    handles = [hvd.allreduce_async(np.full(10, k, dtype=np.float32), name="async.%d" % k,
                                   op=hvd.Sum) for k in range(20)]
    for k, h in enumerate(handles):
        while not hvd.poll(h):
            pass
        assert np.all(hvd.synchronize(h) == k * n)
    z = np.ones(4, dtype=np.float32)
    hvd.synchronize(hvd.allreduce_async_(z, op=hvd.Sum))
    assert np.all(z == n)


def test_submission_from_threads_in_rank_dependent_order():
    n, r = hvd.size(), hvd.rank()
    arrays = {k: np.full(k + 1, r, dtype=np.float32) for k in range(16)}
    order = list(arrays)[::-1] if r % 2 else list(arrays)
    handles = {}

    def submit(keys):
        for k in keys:
            handles[k] = hvd.allreduce_async_(arrays[k], name="threads.%d" % k, op=hvd.Sum)

    threads = [threading.Thread(target=submit, args=(order[i::2],)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, h in handles.items():
        hvd.synchronize(h)
        assert np.all(arrays[k] == n * (n - 1) / 2)


def test_grouped_allreduce():
    n = hvd.size()
    out = hvd.grouped_allreduce([np.ones(3, np.float32), np.full((2, 2), 2, np.float32)],
                                op=hvd.Sum)
    assert np.all(out[0] == n) and np.all(out[1] == 2 * n)


def test_allgather_ragged():
    n, r = hvd.size(), hvd.rank()
    g = hvd.allgather(np.full((r + 1, 2), r, dtype=np.int32))
    assert g.shape == (n * (n + 1) // 2, 2), g.shape
    assert g[0, 0] == 0 and g[-1, 1] == n - 1


def test_broadcast():
    r = hvd.rank()
    root = hvd.size() - 1
    b = np.full(3, r, dtype=np.float64)
    out = hvd.broadcast(b, root)
    assert np.all(out == root) and np.all(b == r)
    hvd.broadcast_(b, root)
    assert np.all(b == root)


def test_objects():
    obj = hvd.broadcast_object({"rank": hvd.rank(), "list": [1, 2]}, root_rank=0)
    assert obj == {"rank": 0, "list": [1, 2]}
    objs = hvd.allgather_object(("r", hvd.rank()))
    assert objs == [("r", k) for k in range(hvd.size())]


def test_barrier_and_join():
    hvd.barrier()
    last = hvd.join()
    assert 0 <= last < hvd.size()


def test_errors():
    check.raises(ValueError, hvd.allreduce_, np.ones((4, 4))[:, 1], match="C-contiguous")
    check.raises(TypeError, hvd.allreduce, np.ones(2, dtype=np.complex64), match="unsupported dtype")
    # Integers scale as Horovod does (in double, truncated); Adasum needs floating point.
    assert np.array_equal(hvd.allreduce(np.full(2, 3, np.int32), op=hvd.Sum, prescale_factor=0.5),
                          np.full(2, hvd.size(), np.int32))
    check.raises(ValueError, hvd.allreduce, np.ones(2, np.int32), op=hvd.Adasum,
                 match="floating point")
    check.raises(ValueError, hvd.broadcast, np.ones(2), hvd.size(), match="root rank")
    check.raises(ValueError, hvd.synchronize, 10 ** 9, match="unknown")
    if hvd.size() == 1:
        return  # a lone rank's first "dup" may be done before the second comes
    # The second "dup" must come while the first is surely in flight: rank 0 submits both
    # before the other ranks pass the barrier and submit theirs.
    if hvd.rank() == 0:
        h = hvd.allreduce_async(np.ones(2), name="dup")
        check.raises(hvd.RisemlError, hvd.allreduce_async, np.ones(2), name="dup",
                     match="already in flight")
        hvd.barrier()
    else:
        hvd.barrier()
        h = hvd.allreduce_async(np.ones(2), name="dup")
    hvd.synchronize(h)


def test_mismatch_names_tensor_and_ranks():
    if hvd.size() < 2:
        return
    x = np.ones(3 if hvd.rank() == 1 else 4, dtype=np.float32)
    msg = check.raises(hvd.RisemlError, hvd.allreduce, x, name="bad.shape",
                       match="mismatched shapes for allreduce 'bad.shape'")
    assert "rank 1: [3]" in msg, msg
    y = np.ones(2, dtype=np.float32 if hvd.rank() == 0 else np.float64)
    check.raises(hvd.RisemlError, hvd.allreduce, y, name="bad.dtype",
                 match="mismatched data types")
    # still usable
    assert np.all(hvd.allreduce(np.ones(1), op=hvd.Sum) == hvd.size())


if __name__ == "__main__":
    check.run(globals(), hvd.init, hvd.rank)
