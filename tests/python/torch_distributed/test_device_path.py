"""The riseml backend's path for CUDA tensors, on its host-memory stand-in (no GPU needed).

    RISEML_TORCH_DEVICE_STANDIN=1 riseml-launch -n N python3 test_device_path.py

With RISEML_TORCH_DEVICE_STANDIN=1 (tests only) the backend sends CPU tensors down the path CUDA
tensors take (torch_distributed/src/device_path.hpp): the same ops and checks, the collectives
set up lazily at the first device op in the group's op order, the packing of coalesced and
list forms, the Work and its future, with the CPU communicator standing in for NCCL and no
streams. Checked here: results of allreduce (every reduce op and dtype the GPU collectives
take), broadcast, all_gather (list, chunks of one tensor), all_gather_into_tensor,
all_reduce_coalesced, async futures, device ops interleaved with CPU-path ops (barrier), a
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
    scatter_tensor = getattr(dist, "reduce_scatter_tensor", None) or dist._reduce_scatter_base
    refused(lambda: scatter_tensor(torch.zeros(2), torch.ones(2 * size)),
            "_reduce_scatter_base", "reduce_scatter_tensor")
    refused(lambda: dist.reduce_scatter(torch.zeros(2), [torch.ones(2)] * size),
            "reduce_scatter", "reduce_scatter")
    refused(lambda: dist.all_to_all_single(torch.zeros(size), torch.ones(size)),
            "alltoall_base", "all_to_all_single")
    refused(lambda: dist.reduce(torch.ones(2), dst=0), "reduce", "reduce")
    refused(lambda: dist.gather(torch.ones(2), [torch.zeros(2)] * size if rank == 0 else None,
                                dst=0), "gather", "gather")
    if size > 1:
        peer = (rank + 1) % size
        refused(lambda: dist.send(torch.ones(2), dst=peer), "send", "send")
    # The group still works after the refusals (they failed before anything was queued).
    t = torch.ones(5)
    dist.all_reduce(t)
    check(torch.all(t == size), "all_reduce after the refusals")

    ddp_step(rank, size)

    t = torch.tensor([float(len(failures))])
    dist.all_reduce(t)
    dist.destroy_process_group()
    if t.item() != 0:
        print("rank %d: %d failures here, %d on all ranks" % (rank, len(failures), t.item()),
              flush=True)
        sys.exit(1)
    print("rank %d: device path (host stand-in) ok" % rank, flush=True)


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
