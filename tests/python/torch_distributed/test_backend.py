"""The riseml torch.distributed backend: every operation, dtype and reduce op checked against
values computed here, subgroups, async work with futures, DDP, and failures that name the rank.

    riseml-launch -n N python3 test_backend.py ops      # PMIx bootstrap, no MASTER_ADDR
    python3 test_backend.py spawn N                      # file:// store, no launcher
                                                         # (torch 2: "cpu:riseml,cuda:...")
    riseml-launch -n 3 python3 test_backend.py dead      # rank 1 dies: survivors name it
    riseml-launch -n 3 python3 test_backend.py silent    # rank 1 is silent past the timeout
"""
import datetime
import os
import signal
import sys
import tempfile
import time

import torch
import torch.distributed as dist

import riseml.torch.distributed  # noqa: F401  registers "riseml"

R = dist.ReduceOp
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]
COMPLEX = [torch.complex64, torch.complex128]
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        rank = dist.get_rank() if dist.is_initialized() else os.environ.get("RANK", "?")
        print("FAIL rank %s: %s" % (rank, what), flush=True)


def value(rank, n, dtype):
    """Rank's input: small values so that sums and products stay exact in every dtype."""
    base = torch.arange(n, dtype=torch.int64) % 5
    if dtype == torch.bool:
        return ((base + rank) % 2 == 0)
    t = ((base + rank) % 3 + 1).to(torch.float64)
    if dtype in COMPLEX:
        return (t + 1j * (t - 1)).to(dtype)
    return t.to(dtype)


def expected_reduce(op, dtype, n, ranks):
    parts = [value(r, n, dtype) for r in ranks]
    acc = parts[0].clone()
    for p in parts[1:]:
        if op == R.SUM:
            acc = (acc | p) if dtype == torch.bool else acc + p
        elif op == R.AVG:
            acc = acc + p
        elif op == R.PRODUCT:
            acc = (acc & p) if dtype == torch.bool else acc * p
        elif op == R.MIN:
            acc = torch.minimum(acc, p)
        elif op == R.MAX:
            acc = torch.maximum(acc, p)
        elif op == R.BAND:
            acc = acc & p
        elif op == R.BOR:
            acc = acc | p
        elif op == R.BXOR:
            acc = acc ^ p
    if op == R.AVG:
        acc = acc / len(ranks) if (dtype in FLOATS or dtype in COMPLEX) else torch.div(
            acc, len(ranks), rounding_mode="trunc")
    return acc.to(dtype)


def ops_valid(dtype):
    if dtype in COMPLEX:
        return [R.SUM, R.AVG]
    ops = [R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX]
    if dtype == torch.bool:
        return [R.SUM, R.PRODUCT, R.MIN, R.MAX, R.BAND, R.BOR, R.BXOR]
    if dtype in INTS:
        ops += [R.BAND, R.BOR, R.BXOR]
    return ops


def test_reductions(group, ranks):
    me = dist.get_rank()
    for dtype in FLOATS + INTS + COMPLEX + [torch.bool]:
        for op in ops_valid(dtype):
            for n in (1, 7, 1000, 65537):
                t = value(me, n, dtype)
                dist.all_reduce(t, op=op, group=group)
                want = expected_reduce(op, dtype, n, ranks)
                check(torch.equal(t, want), "all_reduce %s %s n=%d" % (dtype, op, n))
            for root in ranks:
                t = value(me, 9, dtype)
                dist.reduce(t, root, op=op, group=group)
                if me == root:
                    check(torch.equal(t, expected_reduce(op, dtype, 9, ranks)),
                          "reduce %s %s root %d" % (dtype, op, root))
            # reduce_scatter: block i of everyone's input goes to the i-th member.
            k = len(ranks)
            ins = [value(me, 5 + i, dtype) for i in range(k)]
            out = torch.empty(5 + ranks.index(me), dtype=dtype)
            dist.reduce_scatter(out, ins, op=op, group=group)
            i = ranks.index(me)
            want = expected_reduce(op, dtype, 5 + i, ranks)
            check(torch.equal(out, want), "reduce_scatter %s %s" % (dtype, op))
    # Sparse COO tensors (SUM): every rank's entries added up, a rank with none included.
    me_i = ranks.index(me)
    for dense_part in (False, True):
        if me_i == 1:
            shape = (0, 3) if dense_part else (0,)
            t = torch.sparse_coo_tensor(torch.zeros(1, 0, dtype=torch.long), torch.zeros(shape),
                                        (6, 3) if dense_part else (6,))
        else:
            vals = torch.ones(2, 3) * (me_i + 1) if dense_part else torch.tensor([1.0, me_i + 1.0])
            t = torch.sparse_coo_tensor(torch.tensor([[0, me_i % 5 + 1]]), vals,
                                        (6, 3) if dense_part else (6,))
        want = torch.zeros((6, 3) if dense_part else (6,))
        for j in range(len(ranks)):
            if j == 1:
                continue
            want[0] += 1 * (j + 1 if dense_part else 1)
            want[j % 5 + 1] += j + 1
        dist.all_reduce(t, group=group)
        check(torch.equal(t.to_dense(), want), "sparse all_reduce (dense part %s)" % dense_part)
    # Refusals are ValueErrors, raised at the call, on this rank alone.
    for dtype, op in ((torch.float32, R.BAND), (torch.float64, R.BXOR)):
        try:
            dist.all_reduce(torch.ones(3, dtype=dtype), op=op, group=group)
            check(False, "all_reduce %s %s was accepted" % (dtype, op))
        except ValueError as e:
            check("riseml" in str(e), "refusal names riseml: %s" % e)
    try:
        dist.all_reduce(torch.ones(4, 4).t(), group=group)
        check(False, "a non-contiguous tensor was accepted")
    except ValueError as e:
        check("contiguous" in str(e), "non-contiguous refusal: %s" % e)


def test_data_movement(group, ranks):
    me = dist.get_rank()
    k = len(ranks)
    i = ranks.index(me)
    for dtype in (torch.float32, torch.float16, torch.int64, torch.bool, torch.complex64):
        for root in ranks:
            t = value(me, 11, dtype)
            dist.broadcast(t, root, group=group)
            check(torch.equal(t, value(root, 11, dtype)), "broadcast %s root %d" % (dtype, root))
        outs = [torch.empty(13, dtype=dtype) for _ in ranks]
        dist.all_gather(outs, value(me, 13, dtype), group=group)
        check(all(torch.equal(o, value(r, 13, dtype)) for o, r in zip(outs, ranks)),
              "all_gather %s" % dtype)
        big = torch.empty(13 * k, dtype=dtype)
        dist.all_gather_into_tensor(big, value(me, 13, dtype), group=group)
        check(torch.equal(big, torch.cat([value(r, 13, dtype) for r in ranks])),
              "all_gather_into_tensor %s" % dtype)
        for root in ranks:
            gl = [torch.empty(6, dtype=dtype) for _ in ranks] if me == root else None
            dist.gather(value(me, 6, dtype), gl, dst=root, group=group)
            if me == root:
                check(all(torch.equal(g, value(r, 6, dtype)) for g, r in zip(gl, ranks)),
                      "gather %s" % dtype)
            out = torch.empty(6, dtype=dtype)
            sl = [value(r, 6, dtype) for r in ranks] if me == root else None
            dist.scatter(out, sl, src=root, group=group)
            check(torch.equal(out, value(me, 6, dtype)), "scatter %s root %d" % (dtype, root))
        # all_to_all: rank i sends j+1 elements to member j, all tagged with the sender.
        ins = [torch.full((j + 1,), 10 * i + j).to(dtype) for j in range(k)]
        outs = [torch.empty(i + 1, dtype=dtype) for _ in range(k)]
        dist.all_to_all(outs, ins, group=group)
        check(all(torch.equal(outs[j], torch.full((i + 1,), 10 * j + i).to(dtype))
                  for j in range(k)), "all_to_all %s" % dtype)
        # all_to_all_single with uneven splits of rows of 3.
        in_splits = [j + 1 for j in range(k)]
        out_splits = [i + 1] * k
        inp = torch.cat([torch.full((j + 1, 3), 10 * i + j) for j in range(k)]).to(dtype)
        out = torch.empty(sum(out_splits), 3, dtype=dtype)
        dist.all_to_all_single(out, inp, out_splits, in_splits, group=group)
        want = torch.cat([torch.full((i + 1, 3), 10 * j + i) for j in range(k)]).to(dtype)
        check(torch.equal(out, want), "all_to_all_single %s" % dtype)
        even_in = (torch.arange(2 * k * 2).reshape(2 * k, 2) + 100 * i).to(dtype)
        even_out = torch.empty_like(even_in)
        dist.all_to_all_single(even_out, even_in, group=group)
        want = torch.cat([(torch.arange(2 * k * 2).reshape(2 * k, 2)[2 * i:2 * i + 2] + 100 * j)
                          for j in range(k)]).to(dtype)
        check(torch.equal(even_out, want), "all_to_all_single even %s" % dtype)
    # Lists that are chunks of one tensor (taken without a copy), the input among the outputs.
    big = torch.zeros(k * 1000)
    parts = list(big.chunk(k))
    parts[i].copy_(value(me, 1000, torch.float32))
    dist.all_gather(parts, parts[i], group=group)
    check(torch.equal(big, torch.cat([value(r, 1000, torch.float32) for r in ranks])),
          "all_gather into chunks of one tensor, in place")
    src = torch.cat([value(me, 999, torch.float64) for _ in ranks])
    out = torch.empty(999, dtype=torch.float64)
    dist.reduce_scatter(out, list(src.chunk(k)), group=group)
    check(torch.equal(out, expected_reduce(R.SUM, torch.float64, 999, ranks)),
          "reduce_scatter from chunks of one tensor")
    check(torch.equal(src, torch.cat([value(me, 999, torch.float64) for _ in ranks])),
          "reduce_scatter leaves its input alone")
    for root in ranks:
        big = torch.full((k * 10,), -1.0)
        dist.gather(value(me, 10, torch.float32), list(big.chunk(k)) if me == root else None,
                    dst=root, group=group)
        if me == root:
            check(torch.equal(big, torch.cat([value(r, 10, torch.float32) for r in ranks])),
                  "gather into chunks of one tensor")
    # The coalesced forms and the tensor form of reduce_scatter.
    ts = [value(me, 3, torch.float32), value(me, 17, torch.float32)]
    dist.all_reduce_coalesced(ts, group=group)
    check(torch.equal(ts[0], expected_reduce(R.SUM, torch.float32, 3, ranks)) and
          torch.equal(ts[1], expected_reduce(R.SUM, torch.float32, 17, ranks)),
          "all_reduce_coalesced")
    lists = [[torch.empty(3), torch.empty(2, 2)] for _ in ranks]
    dist.all_gather_coalesced(lists, [value(me, 3, torch.float32),
                                      value(me, 4, torch.float32).reshape(2, 2)], group=group)
    check(all(torch.equal(lst[0], value(r, 3, torch.float32)) and
              torch.equal(lst[1].reshape(-1), value(r, 4, torch.float32))
              for lst, r in zip(lists, ranks)), "all_gather_coalesced")
    inp = torch.cat([value(me, 4, torch.float64) for _ in ranks])
    out = torch.empty(4, dtype=torch.float64)
    dist.reduce_scatter_tensor(out, inp, group=group)
    check(torch.equal(out, expected_reduce(R.SUM, torch.float64, 4, ranks)),
          "reduce_scatter_tensor")
    dist.barrier(group=group)
    # torch 1.13's dist.monitored_barrier() lets only gloo through; the group's own method
    # is riseml's.
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    pg.monitored_barrier(datetime.timedelta(seconds=30))
    pg.monitored_barrier(datetime.timedelta(seconds=30), wait_all_ranks=True)


def test_async_and_p2p():
    me, n = dist.get_rank(), dist.get_world_size()
    works = []
    tensors = [torch.full((100,), float(me + i)) for i in range(5)]
    for t in tensors:
        works.append(dist.all_reduce(t, async_op=True))
    fut = works[-1].get_future().then(lambda f: f.value()[0] * 2)
    for w in works:
        w.wait()
    total = sum(range(n))
    for i, t in enumerate(tensors):
        check(torch.equal(t, torch.full((100,), float(total + n * i))), "async all_reduce %d" % i)
    check(torch.equal(fut.wait(), torch.full((100,), 2.0 * (total + n * 4))), "future value")
    # A waiter runs the group's queue itself while the worker thread is idle: waiting on a later
    # work runs the earlier ones first, in order; a work nobody waits on is the worker's.
    more = [torch.full((50,), float(10 * me + i)) for i in range(4)]
    later = [dist.all_reduce(t, async_op=True) for t in more]
    later[2].wait()
    check(later[0].is_completed() and later[1].is_completed(), "a later wait ran the earlier works")
    deadline = time.time() + 20
    while not later[3].is_completed() and time.time() < deadline:
        time.sleep(0.001)
    check(later[3].is_completed(), "a work nobody waits on finished")
    for i, t in enumerate(more):
        check(torch.equal(t, torch.full((50,), float(10 * total + n * i))), "later all_reduce %d" % i)
    # A ring of sends and receives, each posted before the matching one: no deadlock.
    right, left = (me + 1) % n, (me - 1) % n
    got = torch.empty(7, dtype=torch.int32)
    req = dist.irecv(got, left, tag=3)
    dist.send(torch.full((7,), me, dtype=torch.int32), right, tag=3)
    req.wait()
    check(torch.equal(got, torch.full((7,), left, dtype=torch.int32)), "send/recv ring")
    dist.barrier()


def test_ddp():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    reference = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    reference.load_state_dict(model.state_dict())
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    n, me = dist.get_world_size(), dist.get_rank()
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        xs = torch.randn(n, 4, 8, generator=g)
        ys = torch.randn(n, 4, 1, generator=g)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(xs[me]), ys[me]).backward()
        opt.step()
        ref_opt.zero_grad()
        # DDP averages the ranks' gradients: the mean of per-rank losses.
        sum(torch.nn.functional.mse_loss(reference(xs[r]), ys[r]) for r in range(n)).div(n).backward()
        ref_opt.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        check(torch.allclose(p, q, atol=1e-5), "DDP parameters match the single-process reference")


TORCH_2 = int(torch.__version__.split(".")[0]) >= 2


def test_torch2(n):
    """torch 2.x: the tensor forms FSDP uses, alone and coalesced, and split_group."""
    me = dist.get_rank()
    out = torch.empty(2 * n)
    dist.all_gather_into_tensor(out, torch.full((2,), float(me)))
    check(out.tolist() == [float(r) for r in range(n) for _ in range(2)], "all_gather_into_tensor")
    mine = torch.empty(2)
    dist.reduce_scatter_tensor(mine, torch.arange(2.0 * n) * (me + 1))
    total = sum(range(1, n + 1))
    check(mine.tolist() == [2.0 * me * total, (2.0 * me + 1) * total], "reduce_scatter_tensor")
    # Coalesced (one core call per batch): FSDP's bucketed all-gather and reduce-scatter.
    ins = [torch.full((3,), float(me)), torch.full((1,), me + 10.0, dtype=torch.float32)]
    outs = [torch.empty(3 * n), torch.empty(n)]
    with dist._coalescing_manager(async_ops=True) as cm:
        for i, o in zip(ins, outs):
            dist.all_gather_into_tensor(o, i)
    cm.wait()
    check(outs[0].tolist() == [float(r) for r in range(n) for _ in range(3)] and
          outs[1].tolist() == [r + 10.0 for r in range(n)], "coalesced all_gather_into_tensor")
    ins = [torch.arange(2.0 * n), torch.arange(1.0 * n) * 10]
    outs = [torch.empty(2), torch.empty(1)]
    with dist._coalescing_manager(async_ops=True) as cm:
        for i, o in zip(ins, outs):
            dist.reduce_scatter_tensor(o, i, op=R.MAX)
    cm.wait()
    check(outs[0].tolist() == [2.0 * me, 2.0 * me + 1] and outs[1].tolist() == [10.0 * me],
          "coalesced reduce_scatter_tensor (MAX)")
    # batch_isend_irecv: torch coalesces it for riseml (supports_coalescing): the receives
    # listed first, two messages to one peer matched in order, mixed dtypes; one Work.
    right, left = (me + 1) % n, (me - 1) % n
    a, b = torch.empty(4), torch.empty(3, dtype=torch.int64)
    ops = [dist.P2POp(dist.irecv, a, left), dist.P2POp(dist.irecv, b, left),
           dist.P2POp(dist.isend, torch.full((4,), float(me)), right),
           dist.P2POp(dist.isend, torch.arange(3) + 100 * me, right)]
    reqs = dist.batch_isend_irecv(ops)
    check(len(reqs) == 1, "batch_isend_irecv returns one Work (got %d)" % len(reqs))
    for r in reqs:
        r.wait()
    check(a.tolist() == [float(left)] * 4 and b.tolist() == [100 * left + i for i in range(3)],
          "batch_isend_irecv ring: %s %s" % (a.tolist(), b.tolist()))
    me_too = torch.zeros(2)
    for r in dist.batch_isend_irecv([dist.P2POp(dist.irecv, me_too, me),
                                     dist.P2POp(dist.isend, torch.full((2,), me + 0.5), me)]):
        r.wait()
    check(me_too.tolist() == [me + 0.5] * 2, "batch_isend_irecv to this rank itself")
    # Other ops inside a coalescing block run at their call; the block's Work waits for them.
    t = torch.full((5,), float(me))
    with dist._coalescing_manager(device=torch.device("cpu"), async_ops=True) as cm:
        dist.broadcast(t, src=n - 1)
    cm.wait()
    check(t.tolist() == [float(n - 1)] * 5, "broadcast in a coalescing block")
    # split_group: even and odd ranks, each its own riseml group.
    splits = [[r for r in range(n) if r % 2 == 0], [r for r in range(n) if r % 2 == 1]]
    group = dist.split_group(split_ranks=[s for s in splits if s])
    t = torch.ones(2) * (me + 1)
    dist.all_reduce(t, group=group)
    mates = splits[me % 2]
    check(t.tolist() == [float(sum(r + 1 for r in mates))] * 2 and
          dist.get_world_size(group) == len(mates), "split_group all_reduce")


def run_ops():
    dist.init_process_group("riseml")
    n = dist.get_world_size()
    world = list(range(n))
    test_reductions(None, world)
    test_data_movement(None, world)
    test_async_and_p2p()
    if n >= 3:
        members = [0, n - 1]
        sub = dist.new_group(members)
        if dist.get_rank() in members:
            test_reductions(sub, members)
            test_data_movement(sub, members)
        odd = dist.new_group([r for r in world if r % 2 == 1])
        if dist.get_rank() % 2 == 1:
            t = torch.ones(3)
            dist.all_reduce(t, group=odd)
            check(torch.equal(t, torch.full((3,), float(len(range(1, n, 2))))), "odd subgroup")
    test_ddp()
    if TORCH_2:
        test_torch2(n)
    dist.barrier()
    # A receive nobody answers does not hold up destroying the group, and then fails. (Rank 0
    # hosts the store the others' receives poll, and its server goes with rank 0's group: rank 0
    # keeps the store, and stays a moment, so their receive sees their own group go first.)
    me = dist.get_rank()
    store = dist.distributed_c10d._get_default_store()  # noqa: F841 (kept alive on purpose)
    pending = dist.irecv(torch.empty(1), (me + 1) % n, tag=99)
    start = time.monotonic()
    import warnings
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        dist.destroy_process_group()
    # torch 2 warned "No backend of type 0 found" while riseml was a ProcessGroup, not a Backend.
    check(not [w for w in warned if "backend" in str(w.message).lower()],
          "destroy_process_group warned: %s" % [str(w.message) for w in warned])
    check(time.monotonic() - start < 10, "destroy with a pending irecv took %.1f s" %
          (time.monotonic() - start))
    try:
        pending.wait()
        check(False, "a receive nobody answered completed")
    except RuntimeError as e:
        check("destroyed" in str(e), "the pending receive says why: %s" % e)
    if me == 0:
        time.sleep(3)


def spawned_rank(rank, size, init_file, result_dir):
    # torch 2: the per-device form, riseml for CPU tensors (cuda:nccl needs a GPU; gloo here).
    backend = "riseml"
    if TORCH_2:
        backend = "cpu:riseml,cuda:" + ("nccl" if torch.cuda.is_available() else "gloo")
    dist.init_process_group(backend, init_method="file://" + init_file, rank=rank,
                            world_size=size)
    if TORCH_2:
        cpu = dist.group.WORLD._get_backend(torch.device("cpu"))
        check(cpu.name() == "riseml", "%s: CPU tensors go to %s" % (backend, cpu.name()))
    test_data_movement(None, list(range(size)))
    test_async_and_p2p()
    test_ddp()
    dist.barrier()
    dist.destroy_process_group()
    open(os.path.join(result_dir, str(rank)), "w").write("\n".join(failures))


def run_spawn(size):
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as d:
        mp.spawn(spawned_rank, args=(size, os.path.join(d, "init"), d), nprocs=size)
        for r in range(size):
            text = open(os.path.join(d, str(r))).read()
            if text:
                failures.extend(text.split("\n"))


def run_failure(kind):
    # The launcher stops the survivors (SIGTERM) once a rank is killed: they report first.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    dist.init_process_group("riseml", timeout=datetime.timedelta(seconds=4))
    me = dist.get_rank()
    t = torch.ones(1000)
    dist.all_reduce(t)
    if me == 1:
        if kind == "dead":
            os.kill(os.getpid(), 9)
        time.sleep(12)  # silent past the others' timeout
        os._exit(0)
    start = time.monotonic()
    try:
        dist.all_reduce(t)
        check(False, "all_reduce went through without rank 1")
    except RuntimeError as e:
        took = time.monotonic() - start
        print("rank %d: %.1f s: %s" % (me, took, e), flush=True)
        check("rank 1" in str(e), "the error names rank 1: %s" % e)
        check(took < 10, "the error came within the timeout (took %.1f s)" % took)
    os._exit(1 if failures else 0)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "ops"
    if mode == "ops":
        run_ops()
    elif mode == "spawn":
        run_spawn(int(sys.argv[2]))
    else:
        run_failure(mode)
    if failures:
        print("%d failure(s)" % len(failures), flush=True)
        sys.exit(1)
    print("ok", flush=True)
