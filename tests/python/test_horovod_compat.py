"""Horovod's API beyond allreduce/allgather/broadcast, with Horovod's semantics: process sets,
reducescatter, alltoall, grouped allgather, sparse allreduce, Adasum, int8/int16/bool, integer
scaling, the exception classes, join rules, HOROVOD_* variables and Horovod's cross numbers,
the dynamic timeline, capability queries, SyncBatchNorm and init after shutdown. Run under
riseml-launch -n 1..4."""
import json
import os
import shutil
import sys
import tempfile
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402
import riseml.torch as hvd  # noqa: E402


def expect_raises(classes, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except classes as e:
        return e
    raise AssertionError("%s did not raise %s" % (fn.__name__, classes))


def test_environment_and_queries():
    n, r = hvd.size(), hvd.rank()
    if "HOROVOD_RANK" in os.environ:  # riseml-launch and the SPANK plugin export them
        assert int(os.environ["HOROVOD_RANK"]) == r
        assert int(os.environ["HOROVOD_SIZE"]) == n
        assert int(os.environ["HOROVOD_LOCAL_RANK"]) == hvd.local_rank()
        assert int(os.environ["HOROVOD_LOCAL_SIZE"]) == hvd.local_size()
    for q in (hvd.mpi_built, hvd.mpi_enabled, hvd.gloo_built, hvd.gloo_enabled, hvd.ccl_built,
              hvd.ddl_built, hvd.rocm_built, hvd.mpi_threads_supported):
        assert q() is False, q.__name__
    assert bool(hvd.nccl_built()) == hvd.cuda_built() == hvd.gpu_status()[0]


def test_cross_numbers_match_the_launcher():
    # Horovod's definition (common/horovod_ranks.hpp): the ranks with this local rank, one per
    # node that has one. riseml-launch and the SPANK plugin export it as HOROVOD_CROSS_*.
    if "HOROVOD_CROSS_RANK" in os.environ:
        assert hvd.cross_rank() == int(os.environ["HOROVOD_CROSS_RANK"]), hvd.cross_rank()
        assert hvd.cross_size() == int(os.environ["HOROVOD_CROSS_SIZE"]), hvd.cross_size()
    assert 0 <= hvd.cross_rank() < hvd.cross_size() <= hvd.size()
    crosses = hvd.allgather_object((hvd.local_rank(), hvd.cross_rank(), hvd.cross_size()))
    for local_rank in {c[0] for c in crosses}:  # each local rank's ranks number 0.. in order
        mine = [c for c in crosses if c[0] == local_rank]
        assert [c[1] for c in mine] == list(range(len(mine))), crosses
        assert all(c[2] == len(mine) for c in mine), crosses


def test_dtypes():
    n = hvd.size()
    for dtype in (torch.int8, torch.int16, torch.uint8, torch.int32, torch.int64):
        t = torch.ones(5, dtype=dtype)
        out = hvd.allreduce(t, op=hvd.Sum)
        assert out.dtype == dtype and torch.equal(out, torch.full((5,), n, dtype=dtype)), dtype
        g = hvd.allgather(t)
        assert g.dtype == dtype and g.shape == (5 * n,)
        assert torch.equal(hvd.broadcast(torch.full((3,), hvd.rank(), dtype=dtype), 0),
                           torch.zeros(3, dtype=dtype))
    # int8 wraps like the integers it is
    big = torch.full((2,), 100, dtype=torch.int8)
    assert torch.equal(hvd.allreduce(big, op=hvd.Sum),
                       (torch.full((2,), 100 * n, dtype=torch.int64)).to(torch.int8))
    flags = torch.tensor([hvd.rank() == 0, False, True])
    assert torch.equal(hvd.allreduce(flags, op=hvd.Max), torch.tensor([True, False, True]))
    assert torch.equal(hvd.allreduce(flags, op=hvd.Min),
                       torch.tensor([n == 1, False, True]))
    assert hvd.allgather(flags).dtype == torch.bool
    # integers scale in double and truncate toward zero, as Horovod
    x = torch.tensor([7, -7, 3], dtype=torch.int32)
    out = hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5)
    assert torch.equal(out, torch.tensor([3, -3, 1], dtype=torch.int32) * n), out
    out = hvd.allreduce(x, op=hvd.Sum, postscale_factor=0.5)
    assert torch.equal(out, (x.double() * n * 0.5).trunc().int()), out


def test_exception_classes():
    assert issubclass(hvd.HorovodInternalError, RuntimeError)
    assert issubclass(hvd.RisemlValueError, ValueError)
    assert issubclass(hvd.RisemlValueError, hvd.HorovodInternalError)
    t = torch.ones(4)
    if hvd.size() > 1:
        # Rank 0's first one is still in flight: the others submit it after the barrier.
        if hvd.rank() == 0:
            h = hvd.allreduce_async(t, name="compat.duplicate")
            expect_raises(ValueError, hvd.allreduce_async, t, name="compat.duplicate")
            hvd.barrier()
        else:
            hvd.barrier()
            h = hvd.allreduce_async(t, name="compat.duplicate")
        hvd.synchronize(h)
    if hvd.size() > 1:
        # a shape that differs between ranks fails on every rank as an internal error
        bad = torch.ones(3 + hvd.rank())
        e = expect_raises(hvd.HorovodInternalError, hvd.allreduce, bad, name="compat.mismatch")
        assert "shapes" in str(e), e
        # the engine has stopped: start it again for the rest
        hvd.shutdown()
        hvd.init()


def test_reducescatter():
    n, r = hvd.size(), hvd.rank()
    for rows in (4 * n, 4 * n + 3, 1, 0):
        base = torch.arange(rows * 3, dtype=torch.float32).reshape(rows, 3)
        out = hvd.reducescatter(base * (r + 1), op=hvd.Sum)
        mine = rows // n + (1 if r < rows % n else 0)
        first = (rows // n) * r + min(r, rows % n)
        expected = base[first:first + mine] * (n * (n + 1) / 2)
        assert out.shape == (mine, 3) and torch.equal(out, expected), (rows, out, expected)
    # default Average; integers; prescale
    t = torch.full((2 * n, 2), float(r))
    assert torch.allclose(hvd.reducescatter(t), torch.full((2, 2), (n - 1) / 2))
    i = torch.full((n, 2), r + 1, dtype=torch.int64)
    assert torch.equal(hvd.reducescatter(i, op=hvd.Sum),
                       torch.full((1, 2), n * (n + 1) // 2, dtype=torch.int64))
    assert torch.equal(hvd.reducescatter(torch.ones(n), op=hvd.Sum, prescale_factor=2.0),
                       torch.full((1,), 2.0 * n))
    # grouped: two tensors, one operation
    a, b = torch.ones(n * 2, 3), torch.full((n + 1,), 2.0)
    oa, ob = hvd.grouped_reducescatter([a, b], op=hvd.Sum)
    assert torch.equal(oa, torch.full((2, 3), float(n)))
    assert torch.equal(ob, torch.full((2 if r == 0 else 1,), 2.0 * n))
    # autograd, as Horovod: the output gradients gathered, times the size for Sum
    x = torch.ones(2 * n, 2, requires_grad=True)
    (hvd.reducescatter(x, op=hvd.Sum) * (r + 1)).sum().backward()
    expected = n * torch.repeat_interleave(torch.arange(1, n + 1, dtype=torch.float32), 2)
    assert torch.equal(x.grad, expected.unsqueeze(1).expand(2 * n, 2)), x.grad
    y = torch.ones(2 * n, requires_grad=True)
    (hvd.reducescatter(y) * (r + 1)).sum().backward()
    expected = torch.repeat_interleave(torch.arange(1, n + 1, dtype=torch.float32), 2)
    assert torch.equal(y.grad, expected), y.grad
    e = expect_raises(ValueError, hvd.reducescatter, torch.ones(n), op=hvd.Adasum)
    assert isinstance(e, RuntimeError), type(e)
    expect_raises(ValueError, hvd.reducescatter, torch.tensor(1.0))


def test_alltoall():
    n, r = hvd.size(), hvd.rank()
    # rank r sends (d + 1) rows to rank d, each row filled with r
    splits = torch.tensor([d + 1 for d in range(n)], dtype=torch.int32)
    t = torch.full((int(splits.sum()), 2), float(r))
    out, received = hvd.alltoall(t, splits)
    assert received.dtype == torch.int32 and received.tolist() == [r + 1] * n
    expected = torch.cat([torch.full((r + 1, 2), float(s)) for s in range(n)])
    assert torch.equal(out, expected)
    # equal split, returns just the tensor
    eq = torch.arange(2 * n, dtype=torch.int64) + 100 * r
    got = hvd.alltoall(eq)
    assert torch.equal(got, torch.cat([torch.arange(2 * r, 2 * r + 2) + 100 * s
                                       for s in range(n)]))
    h = hvd.alltoall_async(eq, name="compat.alltoall.async")
    out2, rec2 = hvd.synchronize(h)
    assert torch.equal(out2, got) and rec2.tolist() == [2] * n
    # errors: splits of the wrong type, length, sum; an uneven equal split
    expect_raises(ValueError, hvd.alltoall, torch.ones(n), torch.ones(n))
    expect_raises(ValueError, hvd.alltoall, torch.ones(n), torch.ones(n + 1, dtype=torch.int32))
    expect_raises(ValueError, hvd.alltoall, torch.ones(n), torch.full((n,), 2, dtype=torch.int32))
    if n > 1:
        expect_raises(ValueError, hvd.alltoall, torch.ones(n + 1))
    # autograd: the gradients go back
    x = torch.ones(2 * n, requires_grad=True)
    y = hvd.alltoall(x)
    (y * torch.arange(2 * n, dtype=torch.float32)).sum().backward()
    assert torch.equal(x.grad, torch.tensor([2.0 * r, 2.0 * r + 1] * n)), x.grad


def test_grouped_allgather():
    n, r = hvd.size(), hvd.rank()
    a = torch.full((r + 1, 2), float(r))
    b = torch.full((1,), r, dtype=torch.float32)
    ga, gb = hvd.grouped_allgather([a, b])
    assert ga.shape == (n * (n + 1) // 2, 2) and torch.equal(gb, torch.arange(n).float())
    x = torch.ones(2, requires_grad=True)
    (hvd.grouped_allgather([x])[0] * (r + 1)).sum().backward()
    assert torch.allclose(x.grad, torch.full((2,), (n + 1) / 2))  # averaged, as Horovod


def test_grouped_allreduce_is_differentiable():
    # (allgather's and broadcast's averaged gradients: test_torch_api.test_autograd)
    n = hvd.size()
    xs = [torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)]
    outs = hvd.grouped_allreduce(xs, op=hvd.Sum)
    sum(o.sum() for o in outs).backward()
    assert all(torch.equal(x.grad, torch.full(x.shape, float(n))) for x in xs)


def adasum_pair(a, b):
    dot, na, nb = float(a @ b), float(a @ a), float(b @ b)
    ca = 1.0 - dot / (2 * na) if na > 0 else 1.0
    cb = 1.0 - dot / (2 * nb) if nb > 0 else 1.0
    return ca * a + cb * b


def adasum_reference(vectors):
    """The tree the core runs: ranks beyond the largest power of two fold in first."""
    vs = [v.double() for v in vectors]
    p = 1
    while p * 2 <= len(vs):
        p *= 2
    for extra in range(p, len(vs)):
        vs[extra - p] = adasum_pair(vs[extra - p], vs[extra])
    vs = vs[:p]
    while len(vs) > 1:
        vs = [adasum_pair(vs[i], vs[i + 1]) for i in range(0, len(vs), 2)]
    return vs[0]


def test_adasum():
    n, r = hvd.size(), hvd.rank()
    gen = torch.Generator().manual_seed(7)
    vectors = [torch.randn(33, generator=gen, dtype=torch.float64) for _ in range(n)]
    out = hvd.allreduce(vectors[r], op=hvd.Adasum)
    assert torch.allclose(out, adasum_reference(vectors), rtol=1e-9, atol=1e-12), out
    # fused (grouped) gives the per-tensor result
    w = [torch.randn(5, generator=gen) for _ in range(n)]
    o1, o2 = hvd.grouped_allreduce([vectors[r].float(), w[r]], op=hvd.Adasum)
    assert torch.allclose(o2, adasum_reference(w).float(), rtol=1e-5, atol=1e-6)
    # identical vectors: Adasum keeps them (not n times them)
    same = torch.ones(4)
    assert torch.allclose(hvd.allreduce(same, op=hvd.Adasum), same)
    expect_raises(ValueError, hvd.allreduce, torch.ones(3, dtype=torch.int32), op=hvd.Adasum)


def test_sparse_allreduce():
    n, r = hvd.size(), hvd.rank()
    i = torch.tensor([[r % 3, 4]])
    v = torch.tensor([1.0, float(r)])
    sp = torch.sparse_coo_tensor(i, v, (6,))
    total = hvd.synchronize(hvd.sparse_allreduce_async(sp, "compat.sparse", hvd.Sum))
    dense = torch.zeros(6)
    for k in range(n):
        dense[k % 3] += 1.0
        dense[4] += k
    assert torch.allclose(total.to_dense(), dense), total
    emb = torch.nn.Embedding(10, 3, sparse=True)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=0.1),
                                   named_parameters=emb.named_parameters())
    hvd.broadcast_parameters(emb.state_dict(), 0)
    emb(torch.tensor([r % 10])).sum().backward()
    opt.step()
    weights = hvd.allgather(emb.weight.detach().unsqueeze(0))
    assert all(torch.allclose(weights[0], weights[k]) for k in range(n))


def test_process_sets():
    n, r = hvd.size(), hvd.rank()
    evens = [k for k in range(n) if k % 2 == 0]
    odds = [k for k in range(n) if k % 2 == 1]
    even_set = hvd.add_process_set(evens)
    odd_set = hvd.add_process_set(hvd.ProcessSet(odds)) if odds else None
    mine = even_set if r % 2 == 0 else odd_set
    assert mine.included() and mine.size() == len(mine.ranks)
    assert mine.rank() == mine.ranks.index(r)
    other = odd_set if mine is even_set else even_set
    if other is not None:
        assert not other.included() and other.rank() == -1
    # the sets run at the same time, each with its own engine
    t = torch.full((3,), float(r))
    s = hvd.allreduce(t, op=hvd.Sum, process_set=mine)
    assert torch.equal(s, torch.full((3,), float(sum(mine.ranks))))
    g = hvd.allgather(torch.tensor([r]), process_set=mine)
    assert g.tolist() == mine.ranks
    root = mine.ranks[-1]
    bc = hvd.broadcast(torch.tensor([float(r)]), root, process_set=mine)
    assert bc.item() == root
    rs = hvd.reducescatter(torch.ones(2 * mine.size()), op=hvd.Sum, process_set=mine)
    assert torch.equal(rs, torch.full((2,), float(mine.size())))
    a2a = hvd.alltoall(torch.full((mine.size(),), float(r)), process_set=mine)
    assert a2a.tolist() == [float(k) for k in mine.ranks]
    hvd.barrier(process_set=mine)
    # the job-wide engine still works meanwhile
    assert torch.equal(hvd.allreduce(torch.ones(1), op=hvd.Sum), torch.full((1,), float(n)))
    # errors: a set this rank is not in; a broadcast root outside the set; a removed set
    if other is not None:
        e = expect_raises(ValueError, hvd.allreduce, t, process_set=other)
        assert "not in process set" in str(e), e
        expect_raises(ValueError, hvd.broadcast, t, other.ranks[0], process_set=mine)
    expect_raises(ValueError, hvd.add_process_set, evens)  # the same ranks again
    expect_raises(ValueError, hvd.add_process_set, [n])    # no such rank
    # the optimizer over a set: averages within it
    p = torch.nn.Parameter(torch.zeros(2))
    opt = hvd.DistributedOptimizer(torch.optim.SGD([p], lr=1.0), named_parameters=[("p", p)],
                                   process_set=mine)
    (p * (r + 1)).sum().backward()
    opt.step()
    assert torch.allclose(p.detach(), -torch.full((2,), sum(k + 1 for k in mine.ranks)
                                                  / mine.size())), p
    assert hvd.remove_process_set(even_set)
    if odd_set is not None:
        assert hvd.remove_process_set(odd_set)
    assert even_set.process_set_id is None
    expect_raises(ValueError, hvd.allreduce, t, process_set=even_set)
    assert not hvd.remove_process_set(hvd.global_process_set)
    # a set of every rank but the last, added again after removal
    if n > 2:
        head = hvd.add_process_set(list(range(n - 1)))
        if r < n - 1:
            assert hvd.allreduce(torch.ones(1), op=hvd.Sum, process_set=head).item() == n - 1
        hvd.remove_process_set(head)


def test_join_rules():
    n, r = hvd.size(), hvd.rank()
    if n == 1:
        return
    if r == 0:
        assert hvd.join() in range(n)
    else:
        expect_raises(RuntimeError, hvd.allgather, torch.ones(2), name="compat.join.gather")
        expect_raises(RuntimeError, hvd.broadcast, torch.ones(2), 1, name="compat.join.bcast")
        # allreduces go on, with zeros from the joined rank
        assert hvd.allreduce(torch.ones(2), op=hvd.Sum, name="compat.join.ar")[0] == n - 1
        hvd.join()


def test_join_rule_fails_at_once_whatever_the_names():
    # Each rank joins in turn while the others allgather under names of their own (as unnamed
    # tensors are numbered per rank, and a rank that joined has counted fewer): the allgather
    # fails at once on every rank instead of waiting for a name that never comes.
    n, r = hvd.size(), hvd.rank()
    for first in range(n):
        if r == first:
            hvd.join()
            continue
        expect_raises(RuntimeError, hvd.allgather, torch.ones(2), name="compat.join.own.%d.%d" % (first, r))
        hvd.join()


def test_timeline_dynamic():
    path = hvd.broadcast_object(tempfile.mkdtemp(prefix="riseml-tl-") if hvd.rank() == 0 else None, 0)
    first, second = os.path.join(path, "one.json"), os.path.join(path, "two.json")
    hvd.start_timeline(first)
    hvd.allreduce(torch.ones(3), name="compat.timeline.one")
    hvd.start_timeline(second)  # switches files
    hvd.allreduce(torch.ones(3), name="compat.timeline.two")
    hvd.stop_timeline()
    hvd.barrier()
    hvd.allreduce(torch.ones(3), name="compat.timeline.after")
    hvd.barrier()
    if hvd.rank() == 0:
        one, two = json.load(open(first)), json.load(open(second))
        names1 = {e["args"]["name"] for e in one if e.get("ph") == "M"}
        names2 = {e["args"]["name"] for e in two if e.get("ph") == "M"}
        assert "compat.timeline.one" in names1, names1
        assert "compat.timeline.two" in names2 and "compat.timeline.after" not in names2, names2
    expect_raises(RuntimeError, hvd.start_timeline, "/nonexistent-dir/x/timeline.json") \
        if hvd.rank() == 0 else None
    hvd.barrier()
    if hvd.rank() == 0:
        shutil.rmtree(path, ignore_errors=True)


def test_sync_batch_norm():
    n, r = hvd.size(), hvd.rank()
    gen = torch.Generator().manual_seed(3)
    for shape in ((2, 4), (3, 4, 5), (2, 4, 3, 3)):
        full = torch.randn((n * shape[0],) + shape[1:], generator=gen, dtype=torch.float64)
        sync_bn = hvd.SyncBatchNorm(4).double()
        bn = (torch.nn.BatchNorm1d if len(shape) < 4 else torch.nn.BatchNorm2d)(4).double()
        x1 = full[r * shape[0]:(r + 1) * shape[0]].clone().requires_grad_()
        x2 = full.clone().requires_grad_()
        out1, out2 = sync_bn(x1), bn(x2)
        assert torch.allclose(out1, out2[r * shape[0]:(r + 1) * shape[0]], atol=1e-10)
        assert torch.allclose(sync_bn.running_mean, bn.running_mean, atol=1e-12)
        assert torch.allclose(sync_bn.running_var, bn.running_var, atol=1e-12)
        w = torch.randn(out2.shape, generator=gen, dtype=torch.float64)
        (out1 * w[r * shape[0]:(r + 1) * shape[0]]).sum().backward()
        (out2 * w).sum().backward()
        assert torch.allclose(x1.grad, x2.grad[r * shape[0]:(r + 1) * shape[0]], atol=1e-10)
        assert torch.allclose(hvd.allreduce(sync_bn.weight.grad, op=hvd.Sum), bn.weight.grad,
                              atol=1e-10)
        assert torch.allclose(hvd.allreduce(sync_bn.bias.grad, op=hvd.Sum), bn.bias.grad,
                              atol=1e-10)
        sync_bn.eval()
        bn.eval()
        assert torch.allclose(sync_bn(x1.detach()), bn(x1.detach()), atol=1e-10)


def test_synchronize_warning_wording():
    p = torch.nn.Parameter(torch.ones(2))
    opt = hvd.DistributedOptimizer(torch.optim.SGD([p], lr=0.1), named_parameters=[("w", p)])
    p.sum().backward()
    opt.synchronize()
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        opt.step()
    assert any("optimizer.step() called without optimizer.skip_synchronize()" in str(w.message)
               for w in ws)


def test_reinit():
    r, n = hvd.rank(), hvd.size()
    hvd.shutdown()
    assert not hvd.is_initialized()
    hvd.init()
    assert hvd.is_initialized() and (hvd.rank(), hvd.size()) == (r, n)
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == n


if __name__ == "__main__":
    check.run(globals(), hvd.init, hvd.rank)
