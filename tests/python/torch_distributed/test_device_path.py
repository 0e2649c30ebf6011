"""The riseml backend's path for CUDA tensors, on its host-memory stand-in (no GPU needed).

    RISEML_TORCH_DEVICE_STANDIN=1 riseml-launch -n N python3 test_device_path.py

With RISEML_TORCH_DEVICE_STANDIN=1 (tests only) the backend sends CPU tensors down the path CUDA
tensors take (torch_distributed/src/device_path.hpp): the same ops and checks, the collectives
set up lazily at the first device op in the group's op order, the packing of coalesced and
list forms, the Work and its future, with the CPU communicator standing in for NCCL and no
streams. Checked here: results of allreduce (every reduce op and dtype the GPU collectives
take), broadcast, all_gather (list, chunks of one tensor), all_gather_into_tensor,
all_reduce_coalesced, reduce_scatter_tensor, reduce_scatter (equal and unequal blocks), their
coalesced forms, all_to_all_single (equal and given splits), all_to_all, reduce, gather and
scatter, send and recv alone and in batch_isend_irecv (one batch), async futures, device ops
interleaved with CPU-path ops (barrier), a
DDP training step against the same step computed locally, and the refusals: the ops and
dtypes the GPU collectives lack fail that call, naming the op and the fix
("cpu:riseml,cuda:nccl"). What needs a GPU (events, our stream, recordStream, NCCL) is
checked by tests/gpu/torch_backend_cuda_check.py.
"""
import os
import sys
import warnings

import torch
import torch.distributed as dist

import riseml.torch.distributed  # noqa: F401  registers "riseml"
import _riseml_c10d

R = dist.ReduceOp
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL rank %d: %s" % (dist.get_rank(), what), flush=True)


def value(rank, n, dtype):
    t = ((torch.arange(n, dtype=torch.int64) + rank) % 3 + 1).to(torch.float64)
    if dtype.is_complex:
        return (t + 1j * (t - 1)).to(dtype)
    return t.to(dtype)


def expected(op, dtype, n, size):
    parts = [value(r, n, dtype) for r in range(size)]
    acc = parts[0].clone()
    for p in parts[1:]:
        if op in (R.SUM, R.AVG):
            acc = acc + p
        elif op == R.PRODUCT:
            acc = acc * p
        elif op == R.MIN:
            acc = torch.minimum(acc, p)
        elif op == R.MAX:
            acc = torch.maximum(acc, p)
    if op == R.AVG:
        acc = acc / size
    return acc


def refused(fn, op_name, what):
    """fn() must raise, naming the op and the fix."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001  torch wraps the backend's error variously
        msg = str(e)
        check(op_name in msg and "cpu:riseml,cuda:nccl" in msg,
              "%s: the error does not name %r and the fix: %s" % (what, op_name, msg))
        # A build without the GPU path says so (and how to get one), not which ops it has.
        if not _riseml_c10d.cuda_tensors and "NCCL has no such type" not in msg \
                and "BAND" not in msg:
            check("built without GPU support" in msg and "rebuild riseml with CUDA" in msg,
                  "%s: a CPU-only build's error says so: %s" % (what, msg))
        return
    check(False, "%s: was not refused" % what)


def main():
    if os.environ.get("RISEML_TORCH_DEVICE_STANDIN") != "1":
        sys.exit("run with RISEML_TORCH_DEVICE_STANDIN=1 (the device path's host stand-in)")
    dist.init_process_group("riseml")
    rank, size = dist.get_rank(), dist.get_world_size()
    print("rank %d/%d: cuda_tensors=%s" % (rank, size, _riseml_c10d.cuda_tensors), flush=True)

    # A CPU-path op first: the device path's set-up comes after it, in order, on every rank.
    dist.barrier()

    # allreduce: the reduce ops and dtypes NCCL has (AVG on floating point only).
    n = 33
    for dtype in [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
                  torch.uint8, torch.int32, torch.int64]:
        ops = [R.SUM, R.PRODUCT, R.MIN, R.MAX] + ([R.AVG] if dtype.is_floating_point else [])
        for op in ops:
            t = value(rank, n, dtype)
            dist.all_reduce(t, op=op)
            want = expected(op, dtype, n, size).to(dtype)
            tol = 1e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-6
            check(torch.allclose(t.double(), want.double(), rtol=tol),
                  "all_reduce %s %s: %s != %s" % (op, dtype, t[:5], want[:5]))
    for dtype in [torch.complex64, torch.complex128]:
        for op in [R.SUM, R.AVG]:
            t = value(rank, n, dtype)
            dist.all_reduce(t, op=op)
            check(torch.allclose(t, expected(op, dtype, n, size).to(dtype)),
                  "all_reduce %s %s" % (op, dtype))
    empty = torch.empty(0)
    dist.all_reduce(empty)

    # broadcast from every root
    for root in range(size):
        t = value(rank, 17, torch.float32)
        dist.broadcast(t, src=root)
        check(torch.equal(t, value(root, 17, torch.float32)), "broadcast from %d" % root)

    # all_gather: separate outputs (gathered, then copied), chunks of one tensor (straight in)
    mine = value(rank, 9, torch.float64)
    outs = [torch.zeros(9, dtype=torch.float64) for _ in range(size)]
    dist.all_gather(outs, mine)
    for r in range(size):
        check(torch.equal(outs[r], value(r, 9, torch.float64)), "all_gather list, part %d" % r)
    whole = torch.zeros(size * 9, dtype=torch.float64)
    dist.all_gather(list(whole.chunk(size)), mine)
    check(torch.equal(whole, torch.cat([value(r, 9, torch.float64) for r in range(size)])),
          "all_gather into chunks of one tensor")
    into = torch.zeros(size, 4, 5)
    gather_into = getattr(dist, "all_gather_into_tensor", None) or dist._all_gather_base  # 1.13
    gather_into(into, torch.full((4, 5), float(rank)))
    check(all(torch.all(into[r] == r) for r in range(size)), "all_gather_into_tensor")

    # all_reduce_coalesced: separate tensors (packed, unpacked) and views of one flat tensor
    if hasattr(dist, "all_reduce_coalesced"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ts = [value(rank, k, torch.float32) for k in (3, 1, 7)]
            dist.all_reduce_coalesced(ts)
            for k, t in zip((3, 1, 7), ts):
                check(torch.equal(t, expected(R.SUM, torch.float32, k, size)),
                      "all_reduce_coalesced, %d elements" % k)
            flat = value(rank, 10, torch.float32)
            views = [flat[:4], flat[4:]]
            dist.all_reduce_coalesced(views, op=R.MAX)
            check(torch.equal(flat, expected(R.MAX, torch.float32, 10, size)),
                  "all_reduce_coalesced on views of one tensor")

    reduce_scatters(rank, size)
    all_to_alls(rank, size)
    rooted(rank, size)

    # async, futures, interleaved with a CPU-path op
    works, tensors = [], []
    for i in range(6):
        t = torch.full((1000,), float(rank + i))
        tensors.append(t)
        works.append(dist.all_reduce(t, async_op=True))
        if i == 2:
            dist.barrier()
    fut = works[-1].get_future().then(lambda f: f.value()[0] * 2)
    for i, (w, t) in enumerate(zip(works, tensors)):
        w.wait()
        check(torch.all(t == sum(r + i for r in range(size))), "async all_reduce %d" % i)
    check(torch.all(fut.wait() == 2 * sum(r + 5 for r in range(size))), "future then()")

    # refused: what the GPU collectives lack, each naming the op and the fix
    try:
        dist.all_reduce(torch.ones(3, dtype=torch.int32), op=R.AVG)
        check(False, "AVG of int32 was not refused")
    except Exception as e:  # noqa: BLE001
        check("AVG" in str(e) and "SUM, then divide" in str(e), "AVG of int32: %s" % e)
    refused(lambda: dist.all_reduce(torch.ones(3, dtype=torch.int16)), "allreduce", "int16")
    refused(lambda: dist.all_reduce(torch.ones(3, dtype=torch.bool)), "allreduce", "bool")
    refused(lambda: dist.all_reduce(torch.ones(3, dtype=torch.int32), op=R.BAND),
            "allreduce", "BAND")
    if size > 1:
        # NCCL pairs a receive with one sender: none from any rank on the device.
        refused(lambda: dist.recv(torch.ones(2)), "recvAnysource", "recv from any rank")
    # The group still works after the refusals (they failed before anything was queued).
    t = torch.ones(5)
    dist.all_reduce(t)
    check(torch.all(t == size), "all_reduce after the refusals")

    if size > 1:
        point_to_point(rank, size)

    ddp_step(rank, size)

    t = torch.tensor([float(len(failures))])
    dist.all_reduce(t)
    dist.destroy_process_group()
    if t.item() != 0:
        print("rank %d: %d failures here, %d on all ranks" % (rank, len(failures), t.item()),
              flush=True)
        sys.exit(1)
    print("rank %d: device path (host stand-in) ok" % rank, flush=True)


def reduce_scatters(rank, size):
    """reduce_scatter_tensor (FSDP's gradient step), the list form with equal and with unequal
    blocks (padded to one reduce-scatter), and the coalesced forms of both directions (FSDP2's
    foreach path), each against the sum computed here from every rank's data."""
    scatter_tensor = getattr(dist, "reduce_scatter_tensor", None) or dist._reduce_scatter_base
    for dtype in [torch.float32, torch.float64, torch.bfloat16, torch.int32, torch.complex64]:
        ops = [R.SUM] if dtype.is_complex else [R.SUM, R.MIN, R.MAX, R.PRODUCT]
        if dtype.is_floating_point or dtype.is_complex:
            ops.append(R.AVG)
        for op in ops:
            n = 5
            whole = value(rank, size * n, dtype)
            out = torch.zeros(n, dtype=dtype)
            scatter_tensor(out, whole, op=op)
            want = expected(op, dtype, size * n, size).to(dtype)[rank * n:(rank + 1) * n]
            tol = 1e-2 if dtype == torch.bfloat16 else 1e-6
            check(torch.allclose(out.to(torch.complex128) if dtype.is_complex else out.double(),
                                 want.to(torch.complex128) if dtype.is_complex else want.double(),
                                 rtol=tol),
                  "reduce_scatter_tensor %s %s: %s != %s" % (op, dtype, out, want))
    # a 2-D input: rank r's rows
    rows = torch.arange(size * 6, dtype=torch.float32).view(size * 2, 3) + rank
    mine = torch.zeros(2, 3)
    scatter_tensor(mine, rows)
    total = sum(torch.arange(size * 6, dtype=torch.float32).view(size * 2, 3) + r
                for r in range(size))
    check(torch.equal(mine, total[rank * 2:(rank + 1) * 2]), "reduce_scatter_tensor of rows")
    # list form: equal blocks, then unequal ones (rank r's block has r + 1 elements)
    for sizes in ([4] * size, [r + 1 for r in range(size)]):
        parts = [value(rank, k, torch.float32) + 10 * i for i, k in enumerate(sizes)]
        out = torch.zeros(sizes[rank])
        dist.reduce_scatter(out, parts)
        want = sum(value(r, sizes[rank], torch.float32) + 10 * rank for r in range(size))
        check(torch.equal(out, want), "reduce_scatter (list, blocks %s): %s != %s"
              % (sizes, out, want))
        out = torch.zeros(sizes[rank])
        dist.reduce_scatter(out, parts, op=R.MAX)
        want = torch.stack([value(r, sizes[rank], torch.float32) + 10 * rank
                            for r in range(size)]).max(0).values
        check(torch.equal(out, want), "reduce_scatter MAX (list, blocks %s)" % (sizes,))
    # coalesced: several tensors in one call each way, as FSDP2 issues them
    if hasattr(dist, "_coalescing_manager") and hasattr(dist, "reduce_scatter_tensor"):
        ins = [value(rank, size * k, torch.float32) * (i + 1) for i, k in enumerate((3, 1, 4))]
        outs = [torch.zeros(k) for k in (3, 1, 4)]
        with dist._coalescing_manager(async_ops=True) as cm:
            for o, x in zip(outs, ins):
                dist.reduce_scatter_tensor(o, x)
        cm.wait()
        for i, (k, o) in enumerate(zip((3, 1, 4), outs)):
            want = expected(R.SUM, torch.float32, size * k, size)[rank * k:(rank + 1) * k] * (i + 1)
            check(torch.allclose(o, want), "reduce_scatter_tensor coalesced, tensor %d" % i)
        srcs = [torch.full((k,), float(rank * 10 + i)) for i, k in enumerate((2, 5))]
        dsts = [torch.zeros(size * k) for k in (2, 5)]
        with dist._coalescing_manager(async_ops=True) as cm:
            for d, x in zip(dsts, srcs):
                dist.all_gather_into_tensor(d, x)
        cm.wait()
        for i, (k, d) in enumerate(zip((2, 5), dsts)):
            want = torch.cat([torch.full((k,), float(r * 10 + i)) for r in range(size)])
            check(torch.equal(d, want), "all_gather_into_tensor coalesced, tensor %d" % i)


def all_to_alls(rank, size):
    """all_to_all_single with the equal split and with split sizes (rank r sends r + 1 + j rows
    to rank j: every pair a different count, empty ones when the sizes say so), of rows of 3;
    all_to_all of a list (separate tensors: packed, unpacked) and of chunks of one tensor."""
    def block(src, dst, rows):  # what rank src sends rank dst
        return torch.arange(rows * 3, dtype=torch.float32).view(rows, 3) + 100 * src + dst
    x = torch.cat([block(rank, j, 2) for j in range(size)])
    out = torch.zeros(size * 2, 3)
    dist.all_to_all_single(out, x)
    check(torch.equal(out, torch.cat([block(r, rank, 2) for r in range(size)])),
          "all_to_all_single, equal split")
    send = [(rank + j) % 3 for j in range(size)]  # 0 rows sometimes
    recv = [(r + rank) % 3 for r in range(size)]
    x = torch.cat([block(rank, j, send[j]) for j in range(size)])
    out = torch.full((sum(recv), 3), -1.0)
    dist.all_to_all_single(out, x, output_split_sizes=recv, input_split_sizes=send)
    check(torch.equal(out, torch.cat([block(r, rank, recv[r]) for r in range(size)])),
          "all_to_all_single with split sizes %s / %s" % (send, recv))
    ins = [block(rank, j, j + 1) for j in range(size)]
    outs = [torch.zeros(rank + 1, 3) for _ in range(size)]
    dist.all_to_all(outs, ins)
    for r in range(size):
        check(torch.equal(outs[r], block(r, rank, rank + 1)), "all_to_all (list), from %d" % r)
    whole = torch.zeros(size * 2, 3)
    dist.all_to_all(list(whole.chunk(size)), [block(rank, j, 2) for j in range(size)])
    check(torch.equal(whole, torch.cat([block(r, rank, 2) for r in range(size)])),
          "all_to_all into chunks of one tensor")


def rooted(rank, size):
    """reduce (the root gets the result, the others keep their tensors), gather and scatter,
    from every root."""
    for root in range(size):
        t = value(rank, 7, torch.float32)
        dist.reduce(t, dst=root, op=R.MAX)
        want = expected(R.MAX, torch.float32, 7, size) if rank == root else value(rank, 7, torch.float32)
        check(torch.equal(t, want), "reduce MAX to %d" % root)
        mine = torch.full((2, 3), float(rank))
        outs = [torch.zeros(2, 3) for _ in range(size)] if rank == root else None
        dist.gather(mine, outs, dst=root)
        if rank == root:
            check(all(torch.all(outs[r] == r) for r in range(size)), "gather to %d" % root)
        out = torch.zeros(4)
        ins = [torch.full((4,), float(10 * root + r)) for r in range(size)] if rank == root else None
        dist.scatter(out, ins, src=root)
        check(torch.all(out == 10 * root + rank), "scatter from %d: %s" % (root, out))


def point_to_point(rank, size):
    """send and recv: alone (each its own batch on the device, in the group's op order: a ring
    that sends before it receives), and batch_isend_irecv, which torch coalesces for riseml into
    one batch posted at the end (one NCCL group): the receives listed before the sends, which
    would deadlock one by one, two messages to one peer matched in order, several dtypes, an
    empty tensor; per-op Works inside a coalescing block; a collective after them."""
    right, left = (rank + 1) % size, (rank - 1) % size
    for i in range(3):
        dist.send(torch.full((5,), float(10 * rank + i)), dst=right)
        got = torch.zeros(5)
        dist.recv(got, src=left)
        check(torch.equal(got, torch.full((5,), float(10 * left + i))), "send/recv ring, round %d" % i)
    # Sends and receives move bytes: int16 and bool too, which no NCCL reduction takes.
    dist.send(torch.tensor([rank % 2 == 0, True, False]), dst=right)
    flags = torch.zeros(3, dtype=torch.bool)
    dist.recv(flags, src=left)
    check(flags.tolist() == [left % 2 == 0, True, False], "bool send/recv: %s" % flags)
    if rank == 0:
        for r in range(1, size):
            dist.send(torch.arange(4, dtype=torch.int32) + r, dst=r)
    else:
        got = torch.zeros(4, dtype=torch.int32)
        work = dist.irecv(got, src=0)
        work.wait()
        check(torch.equal(got, torch.arange(4, dtype=torch.int32) + rank), "irecv from rank 0")
    a = torch.zeros(6)
    b = torch.zeros(2, 3, dtype=torch.float64)
    c = torch.zeros(3, dtype=torch.int64)
    e = torch.zeros(0)
    ops = [dist.P2POp(dist.irecv, a, left), dist.P2POp(dist.irecv, b, left),
           dist.P2POp(dist.irecv, c, right), dist.P2POp(dist.irecv, e, left),
           dist.P2POp(dist.isend, torch.full((6,), float(rank)), right),
           dist.P2POp(dist.isend, torch.arange(6, dtype=torch.float64).view(2, 3) * rank, right),
           dist.P2POp(dist.isend, torch.arange(3) + 100 * rank, left),
           dist.P2POp(dist.isend, torch.zeros(0), right)]
    reqs = dist.batch_isend_irecv(ops)
    check(len(reqs) == 1, "batch_isend_irecv: one Work for the batch (got %d)" % len(reqs))
    for r in reqs:
        r.wait()
    check(torch.equal(a, torch.full((6,), float(left))), "batch: float32 from the left: %s" % a)
    check(torch.equal(b, torch.arange(6, dtype=torch.float64).view(2, 3) * left),
          "batch: second message from the left, in order: %s" % b)
    check(torch.equal(c, torch.arange(3) + 100 * right), "batch: int64 from the right: %s" % c)
    # A batch may send to this rank itself (torch's nccl test does; NCCL pairs them in a group).
    me = torch.zeros(4)
    for r in dist.batch_isend_irecv([dist.P2POp(dist.irecv, me, rank),
                                     dist.P2POp(dist.isend, torch.full((4,), rank + 0.25), rank)]):
        r.wait()
    check(torch.equal(me, torch.full((4,), rank + 0.25)), "batch to this rank itself: %s" % me)
    # The per-op Works of a coalescing block finish with the batch.
    x = torch.zeros(2, dtype=torch.int16)
    with dist._coalescing_manager(device=x.device, async_ops=True) as cm:
        w_recv = dist.irecv(x, src=left)
        w_send = dist.isend(torch.full((2,), rank * 7, dtype=torch.int16), dst=right)
    cm.wait()
    for w in (w_recv, w_send):
        if w is not None:
            w.wait()
            check(w.is_completed(), "a coalesced op's own Work is completed with the batch")
    check(x.tolist() == [left * 7] * 2, "coalesced irecv of int16: %s" % x)
    t = torch.ones(3)
    dist.all_reduce(t)
    check(torch.all(t == size), "all_reduce after the sends and receives")


def ddp_step(rank, size):
    """Three DDP steps (broadcast of the parameters, allgather of their shapes, bucketed
    allreduce through the device path) against the same steps computed here on every rank's
    data: DDP's averaged gradients are those of the mean loss over the whole batch."""
    torch.manual_seed(1234)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    reference = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                    torch.nn.Linear(16, 3))
    reference.load_state_dict(model.state_dict())
    if rank != 0:  # DDP's broadcast at construction makes rank 0's parameters everyone's
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0)
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0001)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(3):
        g = torch.Generator().manual_seed(step)
        x = torch.randn(size * 4, 8, generator=g)
        y = torch.randint(0, 3, (size * 4,), generator=g)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(x[rank * 4:(rank + 1) * 4]),
                                                 y[rank * 4:(rank + 1) * 4])
        loss.backward()
        opt.step()
        ref_opt.zero_grad()
        torch.nn.functional.cross_entropy(reference(x), y).backward()
        ref_opt.step()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        check(torch.allclose(p, q, atol=1e-5), "DDP step: parameter %s differs from the "
              "locally computed step" % name)


if __name__ == "__main__":
    main()
