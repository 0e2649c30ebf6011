"""The riseml torch.distributed backend on CUDA tensors, against torch's own nccl backend, on a
machine with a GPU (issue 36, item 3). Needs _riseml_c10d built for a CUDA torch 2 with riseml's
GPU support (`_riseml_c10d.cuda_tensors` is True): the build tree's python/ on PYTHONPATH,
`pip install --no-build-isolation .` into the environment of that torch, or the one
`tests/gpu/run.sh device` compiles on the GPU machine.

    python3 tests/gpu/torch_backend_cuda_check.py [--launch riseml-launch] [--sizes-mib 1,4,...]

runs itself under `riseml-launch -n 1`, then `-n 2` when there are 2 GPUs (one per rank), and
each run checks, with init_process_group("riseml") as the default group and an nccl group
(new_group(backend="nccl")) over the same ranks beside it:

1. results equal nccl's: all_reduce (SUM, AVG, MIN, MAX, PRODUCT; float32/64, float16, bfloat16,
   int8/32/64, uint8; 1, 1000 and 2^20+3 elements), broadcast from every root, all_gather (list
   and into one tensor), all_reduce_coalesced, async ops with futures, and stream order: the
   collective issued while a side stream is current, between kernels on that stream, with no
   synchronize in between (our stream waits for the caller's stream; the caller's waits for us);
2. reduce_scatter_tensor (SUM, MAX, AVG; float32, bfloat16, int32), reduce_scatter with unequal
   blocks, reduce_scatter_tensor coalesced (FSDP's gradient path), all_to_all_single, reduce,
   gather and scatter equal nccl's;
3. a DDP training step: the same model, data and seed through riseml and through nccl: the
   parameters after 5 steps agree, and the step time (median of 30) within 3% of nccl's;
4. all_reduce time from 1 MiB up (float32, CUDA events, median of 20 after 5 warm-ups) beside
   nccl's, target within 5%;
5. in a second launch, init_process_group("riseml", device_id=cuda:<local rank>): torch's eager
   initialisation has riseml set up its NCCL communicator at init, so the group's first CUDA op
   may be a send between two ranks (at 1 rank an all_reduce); then new_group with the device
   bound (torch asks ranks outside it for perform_nocolor_split), an all_reduce that waits 6 s
   behind a kernel in a group whose timeout is 3 s (the watchdog must not call a busy GPU a dead
   peer) and destroy_process_group, all within the launch's timeout.

Prints `torch_backend_cuda_check:` lines (ok/FAIL per check, one line per timing with the
ratio and whether it meets the target). Exit: 0 every correctness check passed (timing targets
are reported, not enforced, unless --strict-timing), 1 a check failed, 3 no usable GPU or no
CUDA support in this _riseml_c10d.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

TAG = "torch_backend_cuda_check:"


def say(*parts):
    print(TAG, *parts, flush=True)


# ------------------------------------------------------------------------------------------
# driver: runs the worker under riseml-launch at 1 and (with 2 GPUs) 2 ranks

def driver(args):
    try:
        import torch
        import _riseml_c10d
    except ImportError as e:
        say("cannot import torch or _riseml_c10d (%s): put the build's python/ on PYTHONPATH" % e)
        return 3
    if not torch.cuda.is_available():
        say("no usable GPU here (torch.cuda.is_available() is False)")
        return 3
    if not getattr(_riseml_c10d, "cuda_tensors", False):
        say("this _riseml_c10d takes no CUDA tensors (built without GPU support or for a CPU "
            "torch): rebuild with a CUDA torch 2 and RISEML_CUDA=ON")
        return 3
    gpus = torch.cuda.device_count()
    say("torch %s (cuda %s), %d GPU(s): %s" % (torch.__version__, torch.version.cuda, gpus,
                                                torch.cuda.get_device_name(0)))
    code = 0
    for n in [1, 2]:
        if n > gpus:
            say("-n %d: skipped, %d GPU(s) here (one per rank)" % (n, gpus))
            continue
        cmd = [args.launch, "-n", str(n), "--tag-output", "--timeout", str(args.timeout), "--",
               sys.executable, os.path.abspath(__file__), "--worker",
               "--sizes-mib", args.sizes_mib] + (["--strict-timing"] if args.strict_timing else [])
        say("-n %d: %s" % (n, " ".join(cmd)))
        rc = subprocess.call(cmd, timeout=args.timeout + 30)
        say("-n %d: rc %d" % (n, rc))
        if rc != 0:
            code = 1
        limit = max(30, min(120, args.timeout))
        cmd = [args.launch, "-n", str(n), "--tag-output", "--timeout", str(limit), "--",
               sys.executable, os.path.abspath(__file__), "--worker", "--device-id"]
        say("-n %d device_id: %s" % (n, " ".join(cmd)))
        rc = subprocess.call(cmd, timeout=limit + 30)
        say("-n %d device_id: rc %d" % (n, rc))
        if rc != 0:
            code = 1
    say("RESULT: %s" % ("all correctness checks passed" if code == 0 else "FAILED"))
    return code


# ------------------------------------------------------------------------------------------
# device_id worker: the device set-up at init (eagerConnectSingleDevice) on a real GPU

def device_id_worker():
    import datetime
    import inspect
    import torch
    import torch.distributed as dist
    import riseml.torch.distributed  # noqa: F401  registers "riseml"

    if "device_id" not in inspect.signature(dist.init_process_group).parameters:
        say("device_id: skipped, torch %s has no init_process_group(device_id=...)"
            % torch.__version__)
        return 0
    riseml.torch.distributed.setup_environment()  # LOCAL_RANK before init, as a user's script
    local = int(os.environ.get("LOCAL_RANK", "0"))
    dev = torch.device("cuda", local % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    dist.init_process_group("riseml", device_id=dev, timeout=datetime.timedelta(seconds=60))
    rank, size = dist.get_rank(), dist.get_world_size()
    store = dist.distributed_c10d._get_default_store()
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)
        if rank == 0 or not ok:
            say("rank %d %s device_id: %s" % (rank, "ok  " if ok else "FAIL", what))

    # The group's first CUDA op: a send from rank 0 to rank 1 while the others wait for it
    # through the store (they would hold the NCCL set-up if it were still to come).
    if size == 1:
        t = torch.full((5,), 3.0, device=dev)
        dist.all_reduce(t)
        check(torch.equal(t.cpu(), torch.full((5,), 3.0)), "first op all_reduce at 1 rank")
    elif rank == 0:
        dist.send(torch.full((4,), 7.0, device=dev), dst=1)
        store.wait(["device-id/received"], datetime.timedelta(seconds=60))
    elif rank == 1:
        got = torch.zeros(4, device=dev)
        dist.recv(got, src=0)
        check(torch.equal(got.cpu(), torch.full((4,), 7.0)), "first op a recv from rank 0")
        store.set("device-id/received", "1")
    else:
        store.wait(["device-id/received"], datetime.timedelta(seconds=60))
    members = list(range(max(1, size - 1)))  # leaves the last rank out when there are two
    sub = dist.new_group(members)
    if rank in members:
        t = torch.full((3,), float(rank + 1), device=dev)
        dist.all_reduce(t, group=sub)
        want = float(sum(r + 1 for r in members))
        check(torch.equal(t.cpu(), torch.full((3,), want)), "all_reduce in new_group(%s)" % members)
    t = torch.ones(2, device=dev)
    dist.all_reduce(t)
    check(torch.equal(t.cpu(), torch.full((2,), float(size))), "all_reduce of the whole group")

    # The watchdog on hardware: a group with a 3 s timeout whose all_reduce waits 6 s behind a
    # kernel of the caller's stream: a busy GPU is not a dead peer (a wrong timeout ends the
    # process with "made no progress", and this launch fails).
    short = dist.new_group(list(range(size)), timeout=datetime.timedelta(seconds=3))
    t = torch.ones(4, device=dev)
    dist.all_reduce(t, group=short)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(100_000_000)
    end.record()
    end.synchronize()
    cycles = int(100_000_000 * 6000.0 / max(start.elapsed_time(end), 1e-3))
    t0 = time.perf_counter()
    torch.cuda._sleep(cycles)
    dist.all_reduce(t, group=short)
    torch.cuda.synchronize()
    waited = time.perf_counter() - t0
    check(torch.equal(t.cpu(), torch.full((4,), float(size * size))) and waited > 4.0,
          "all_reduce behind a %.1f s kernel in a group with a 3 s timeout" % waited)
    dist.destroy_process_group()
    if rank == 0:
        say("device_id: %d rank(s), %s" % (size, "FAILED" if failures else "all checks passed"))
    return 1 if failures else 0


# ------------------------------------------------------------------------------------------
# worker: one rank

def worker(args):
    import torch
    import torch.distributed as dist
    import riseml.torch.distributed  # noqa: F401  registers "riseml"

    dist.init_process_group("riseml")
    rank, size = dist.get_rank(), dist.get_world_size()
    dev = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    nccl = dist.new_group(backend="nccl")
    failures = []
    lead = rank == 0

    def report(ok, what):
        if not ok:
            failures.append(what)
        if lead or not ok:
            say("rank %d %s %s" % (rank, "ok  " if ok else "FAIL", what))

    def check(what, fn):
        try:
            report(bool(fn()), what)
        except Exception as e:  # noqa: BLE001  every failure reported, the rest still run
            report(False, "%s: %s: %s" % (what, type(e).__name__, str(e).splitlines()[0]))

    say("rank %d of %d on %s" % (rank, size, torch.cuda.get_device_name(dev))) if lead else None

    def data(n, dtype, seed):
        g = torch.Generator(device="cpu").manual_seed(seed * 1000 + rank)
        t = torch.randint(1, 4, (n,), generator=g)
        return t.to(dtype).to(dev)

    R = dist.ReduceOp
    # 1. results equal nccl's
    floats = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
    ints = [torch.int8, torch.uint8, torch.int32, torch.int64]
    for dtype in floats + ints:
        ops = [R.SUM, R.MIN, R.MAX, R.PRODUCT] + ([R.AVG] if dtype in floats else [])
        for op in ops:
            for n in (1, 1000, (1 << 20) + 3):
                def one(dtype=dtype, op=op, n=n):
                    a = data(n, dtype, 1)
                    b = a.clone()
                    dist.all_reduce(a, op=op)
                    dist.all_reduce(b, op=op, group=nccl)
                    return torch.equal(a, b) if dtype in ints else torch.allclose(
                        a.double(), b.double(), rtol=1e-3, atol=1e-3)
                check("all_reduce %s %s n=%d equals nccl" % (op, dtype, n), one)
    for root in range(size):
        def bcast(root=root):
            a = data(4097, torch.float32, 2)
            b = a.clone()
            dist.broadcast(a, src=root)
            dist.broadcast(b, src=root, group=nccl)
            return torch.equal(a, b)
        check("broadcast from %d equals nccl" % root, bcast)

    def gather_list():
        x = data(777, torch.float16, 3)
        a = [torch.empty_like(x) for _ in range(size)]
        b = [torch.empty_like(x) for _ in range(size)]
        dist.all_gather(a, x)
        dist.all_gather(b, x, group=nccl)
        return all(torch.equal(p, q) for p, q in zip(a, b))
    check("all_gather (list) equals nccl", gather_list)

    def gather_into():
        x = data(1 << 16, torch.bfloat16, 4)
        a = torch.empty(size * x.numel(), dtype=x.dtype, device=dev)
        b = torch.empty_like(a)
        dist.all_gather_into_tensor(a, x)
        dist.all_gather_into_tensor(b, x, group=nccl)
        return torch.equal(a, b)
    check("all_gather_into_tensor equals nccl", gather_into)

    def coalesced():
        import warnings
        ts = [data(k, torch.float32, 5 + k) for k in (3, 100, 7)]
        want = [t.clone() for t in ts]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dist.all_reduce_coalesced(ts)
        for w in want:
            dist.all_reduce(w, group=nccl)
        return all(torch.equal(t, w) for t, w in zip(ts, want))
    check("all_reduce_coalesced equals nccl", coalesced)

    def async_futures():
        ts = [torch.full((1 << 18,), float(rank + i), device=dev) for i in range(8)]
        works = [dist.all_reduce(t, async_op=True) for t in ts]
        fut = works[-1].get_future().then(lambda f: f.value()[0] * 2)
        for w in works:
            w.wait()
        ok = all(torch.all(t == sum(r + i for r in range(size))).item() for i, t in enumerate(ts))
        return ok and torch.all(fut.wait() == 2 * sum(r + 7 for r in range(size))).item()
    check("async all_reduce with futures", async_futures)

    def stream_order():
        # Kernels on a side stream before and after the collective, no synchronize between:
        # correct only if our stream waits for the side stream and the side stream for us.
        side = torch.cuda.Stream(device=dev)
        with torch.cuda.stream(side):
            x = torch.empty(1 << 22, device=dev)
            torch.cuda._sleep(20_000_000)  # a long kernel before the values are written
            x.fill_(float(rank + 1))
            work = dist.all_reduce(x, async_op=True)
            work.wait()  # the side stream waits for the collective, this thread does not
            y = x * 2
        side.synchronize()
        return torch.all(y == 2 * sum(r + 1 for r in range(size))).item()
    check("stream order on a side stream (no CPU synchronisation)", stream_order)

    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        for op in (R.SUM, R.MAX) + ((R.AVG,) if dtype != torch.int32 else ()):
            def scatter(dtype=dtype, op=op):
                x = data(size * 4099, dtype, 6)
                a = torch.empty(4099, dtype=dtype, device=dev)
                b = torch.empty_like(a)
                dist.reduce_scatter_tensor(a, x, op=op)
                dist.reduce_scatter_tensor(b, x, op=op, group=nccl)
                return torch.equal(a, b) if dtype == torch.int32 else torch.allclose(
                    a.double(), b.double(), rtol=1e-3, atol=1e-3)
            check("reduce_scatter_tensor %s %s equals nccl" % (op, dtype), scatter)

    def scatter_list():
        parts = [data(1000 + 7 * j, torch.float32, 7 + j) for j in range(size)]
        a = torch.empty(1000 + 7 * rank, device=dev)
        dist.reduce_scatter(a, parts)
        sums = [p.clone() for p in parts]  # block j summed over the ranks, through nccl
        for w in sums:
            dist.all_reduce(w, group=nccl)
        return torch.allclose(a, sums[rank])
    check("reduce_scatter (list, unequal blocks) equals nccl's sum of this rank's block",
          scatter_list)

    def scatter_coalesced():
        ins = [data(size * k, torch.float32, 8 + k) for k in (3, 1000, 5)]
        outs = [torch.empty(k, device=dev) for k in (3, 1000, 5)]
        with dist._coalescing_manager(async_ops=True) as cm:
            for o, x in zip(outs, ins):
                dist.reduce_scatter_tensor(o, x)
        cm.wait()
        ok = True
        for o, x in zip(outs, ins):
            w = torch.empty_like(o)
            dist.reduce_scatter_tensor(w, x, group=nccl)
            ok = ok and torch.allclose(o, w)
        return ok
    check("reduce_scatter_tensor coalesced equals nccl", scatter_coalesced)

    def all_to_all_splits():
        send = [(rank + j) % 3 + 1 for j in range(size)]
        recv = [(r + rank) % 3 + 1 for r in range(size)]
        x = data(sum(send) * 5, torch.float32, 9).view(sum(send), 5)
        a = torch.empty(sum(recv), 5, device=dev)
        b = torch.empty_like(a)
        dist.all_to_all_single(a, x, output_split_sizes=recv, input_split_sizes=send)
        dist.all_to_all_single(b, x, output_split_sizes=recv, input_split_sizes=send, group=nccl)
        c = torch.empty(size * 4, device=dev)
        d = torch.empty_like(c)
        y = data(size * 4, torch.float32, 10)
        dist.all_to_all_single(c, y)
        dist.all_to_all_single(d, y, group=nccl)
        return torch.equal(a, b) and torch.equal(c, d)
    check("all_to_all_single (equal and given splits) equals nccl", all_to_all_splits)

    def rooted():
        ok = True
        for root in range(size):
            a = data(1001, torch.float32, 11)
            b = a.clone()
            dist.reduce(a, dst=root)
            dist.reduce(b, dst=root, group=nccl)
            ok = ok and (torch.equal(a, b) if rank == root else torch.equal(a, data(1001, torch.float32, 11)))
            x = data(33, torch.float32, 12)
            ga = [torch.empty_like(x) for _ in range(size)] if rank == root else None
            gb = [torch.empty_like(x) for _ in range(size)] if rank == root else None
            dist.gather(x, ga, dst=root)
            dist.gather(x, gb, dst=root, group=nccl)
            if rank == root:
                ok = ok and all(torch.equal(p, q) for p, q in zip(ga, gb))
            ins = [data(17, torch.float32, 13 + r) for r in range(size)] if rank == root else None
            sa, sb = torch.empty(17, device=dev), torch.empty(17, device=dev)
            dist.scatter(sa, ins, src=root)
            dist.scatter(sb, ins, src=root, group=nccl)
            ok = ok and torch.equal(sa, sb)
        return ok
    check("reduce, gather and scatter from every root equal nccl", rooted)

    def point_to_point():
        if size < 2:
            return True
        right, left = (rank + 1) % size, (rank - 1) % size
        dist.send(torch.arange(1000, device=dev) * 1.0 + rank, dst=right)
        got = torch.empty(1000, device=dev)
        dist.recv(got, src=left)
        ok = torch.equal(got.cpu(), torch.arange(1000) * 1.0 + left)
        a, b = torch.empty(4096, device=dev), torch.empty(3, dtype=torch.int64, device=dev)
        ops = [dist.P2POp(dist.irecv, a, left), dist.P2POp(dist.irecv, b, right),
               dist.P2POp(dist.isend, torch.full((4096,), float(rank), device=dev), right),
               dist.P2POp(dist.isend, torch.arange(3, device=dev) + 100 * rank, left)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()
        ok = ok and torch.equal(a.cpu(), torch.full((4096,), float(left)))
        ok = ok and torch.equal(b.cpu(), torch.arange(3) + 100 * right)
        return ok
    check("send/recv and batch_isend_irecv (receives first) on CUDA tensors", point_to_point)
    dist.barrier()

    # 3. DDP: same parameters after 5 steps, step time beside nccl's
    def make_model():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(8), torch.nn.Flatten(),
            torch.nn.Linear(64 * 64, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(dev)

    def train(group, steps, timed):
        model = torch.nn.parallel.DistributedDataParallel(make_model(), device_ids=[dev.index],
                                                          process_group=group)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        g = torch.Generator(device="cpu").manual_seed(rank)
        x = torch.randn(32, 3, 32, 32, generator=g).to(dev)
        y = torch.randint(0, 10, (32,), generator=g).to(dev)
        times = []
        for s in range(steps):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        return model, times

    def ddp_same():
        a, _ = train(None, 5, False)
        b, _ = train(nccl, 5, False)
        return all(torch.allclose(p, q, rtol=1e-4, atol=1e-5)
                   for p, q in zip(a.parameters(), b.parameters()))
    check("DDP: parameters after 5 steps equal nccl's", ddp_same)
    perf_miss = []
    try:
        _, tr = train(None, 40, True)
        _, tn = train(nccl, 40, True)
        r, n_ = statistics.median(tr[10:]), statistics.median(tn[10:])
        ok = r <= n_ * 1.03
        perf_miss += [] if ok else ["DDP step"]
        if lead:
            say("timing DDP step (conv net, batch 32): riseml %.3f ms, nccl %.3f ms, ratio %.3f "
                "(target <= 1.03: %s)" % (r * 1e3, n_ * 1e3, r / n_, "met" if ok else "MISSED"))
    except Exception as e:  # noqa: BLE001
        report(False, "DDP timing: %s" % e)

    # 4. all_reduce time from 1 MiB
    def timed(t, group, iters=20):
        for _ in range(5):
            dist.all_reduce(t, group=group)
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            dist.all_reduce(t, group=group)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return statistics.median(times)

    for mib in [float(s) for s in args.sizes_mib.split(",")]:
        t = torch.ones(int(mib * (1 << 20)) // 4, device=dev)
        r = timed(t, None)
        n_ = timed(t, nccl)
        ok = r <= n_ * 1.05
        if not ok:
            perf_miss.append("all_reduce %g MiB" % mib)
        if lead:
            say("timing all_reduce %7.1f MiB float32: riseml %8.3f ms, nccl %8.3f ms, ratio %.3f "
                "(target <= 1.05: %s)" % (mib, r, n_, r / n_, "met" if ok else "MISSED"))

    if args.strict_timing and perf_miss:
        failures.append("timing targets missed: %s" % ", ".join(perf_miss))
    total = torch.tensor([float(len(failures))], device=dev)
    dist.all_reduce(total, group=nccl)
    dist.destroy_process_group()
    if lead:
        say("%d rank(s): %s; timing targets %s" % (
            size, "all checks passed" if total.item() == 0 else "%d failure(s)" % total.item(),
            "met" if not perf_miss else "missed: " + ", ".join(perf_miss)))
    return 0 if total.item() == 0 else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--launch", default="riseml-launch", help="riseml-launch to run the ranks")
    p.add_argument("--sizes-mib", default="1,4,16,64,256", help="all_reduce sizes to time")
    p.add_argument("--timeout", type=int, default=300, help="seconds per riseml-launch run")
    p.add_argument("--strict-timing", action="store_true", help="a missed timing target fails")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--device-id", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker and args.device_id:
        sys.exit(device_id_worker())
    sys.exit(worker(args) if args.worker else driver(args))


if __name__ == "__main__":
    main()
