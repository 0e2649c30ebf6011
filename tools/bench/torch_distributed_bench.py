#!/usr/bin/python3
"""torch.distributed, riseml against gloo, in the same processes and the same run.

    riseml-launch -n 2 /usr/bin/python3 tools/bench/torch_distributed_bench.py [--ddp]
        [--sizes 4K,64K,1M,16M,256M] [--rounds 5] [--ops all_reduce,all_gather,reduce_scatter]

Every rank joins the default group with backend "riseml" and a second group of the same ranks
with backend "gloo". Each round measures every size with each backend in turn (which goes first
alternates), so the two see the same machine. Per size and backend: the median time of a round's
calls, then the median and the spread (min-max) over rounds; busbw as nccl-tests counts it
(allreduce 2(n-1)/n, allgather and reduce-scatter (n-1)/n of the total bytes). torch 1.13's gloo
has no reduce_scatter: its row is what a gloo user does instead (all_reduce of the whole input). --ddp also times a
DistributedDataParallel training step of an MLP with ~100 MB of float32 gradients under each
backend (forward, backward with DDP's bucketed allreduce, SGD step).
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

import riseml.torch.distributed  # noqa: F401


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def human(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, unit)
    return str(n)


def one_call(op, group, n, bufs, backend):
    # The list forms: torch 1.13's gloo has neither all_gather_into_tensor nor reduce_scatter.
    if op == "all_reduce":
        dist.all_reduce(bufs["x"], group=group)
    elif op == "all_gather":
        dist.all_gather(bufs["parts"], bufs["x"], group=group)
    elif op == "reduce_scatter" and backend == "gloo":
        # What a gloo user does instead: reduce everything, keep the own block.
        dist.all_reduce(bufs["big"], group=group)
    elif op == "reduce_scatter":
        dist.reduce_scatter(bufs["x"], bufs["parts"], group=group)


def bus_factor(op, n):
    return 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n


def time_calls(op, group, n, bufs, iters, backend):
    one_call(op, group, n, bufs, backend)  # warm-up
    samples = []
    for _ in range(iters):
        dist.barrier(group=group)
        t0 = time.perf_counter()
        one_call(op, group, n, bufs, backend)
        samples.append(time.perf_counter() - t0)
    # Every rank reports the slowest rank's time of each call.
    t = torch.tensor(samples, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    return statistics.median(t.tolist())


def ddp_step_time(group, steps, model_seed=0):
    torch.manual_seed(model_seed)
    width = 2560
    model = torch.nn.Sequential(*[m for _ in range(4) for m in
                                  (torch.nn.Linear(width, width), torch.nn.ReLU())])
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)
    x = torch.randn(32, width)
    times = []
    for i in range(steps + 1):
        dist.barrier(group=group)
        t0 = time.perf_counter()
        opt.zero_grad()
        ddp(x).square().mean().backward()
        opt.step()
        if i:
            times.append(time.perf_counter() - t0)
    params = sum(p.numel() for p in model.parameters())
    return statistics.median(times), params


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="4K,64K,1M,16M,256M")
    parser.add_argument("--ops", default="all_reduce,all_gather,reduce_scatter")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget", type=float, default=0.3,
                        help="seconds per size, backend and round (at least 3 calls)")
    parser.add_argument("--ddp", action="store_true")
    parser.add_argument("--ddp-steps", type=int, default=5)
    args = parser.parse_args()

    dist.init_process_group("riseml")
    n, me = dist.get_world_size(), dist.get_rank()
    groups = {"riseml": dist.group.WORLD, "gloo": dist.new_group(backend="gloo")}
    torch.set_num_threads(1)
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    ops = args.ops.split(",")
    results = {}  # (op, size, backend) -> [median per round]
    for rnd in range(args.rounds):
        order = ["riseml", "gloo"] if rnd % 2 == 0 else ["gloo", "riseml"]
        for op in ops:
            for size in sizes:
                per_rank = size // n if op == "all_gather" else size
                count = max(1, per_rank // 4)
                bufs = {"x": torch.ones(count if op != "reduce_scatter" else count // n or 1)}
                bufs["big"] = torch.ones(bufs["x"].numel() * n)
                bufs["parts"] = list(bufs["big"].chunk(n))
                if op == "all_reduce":
                    bufs["x"] = torch.ones(count)
                for backend in order:
                    probe = time_calls(op, groups[backend], n, bufs, 1, backend)
                    iters = int(max(3, min(200, args.budget / max(probe, 1e-6))))
                    t = time_calls(op, groups[backend], n, bufs, iters, backend)
                    results.setdefault((op, size, backend), []).append(t)
    if me == 0:
        print("# torch.distributed: riseml vs gloo, %d ranks, same processes; %d rounds, "
              "time = median over rounds of each round's median call (slowest rank); "
              "spread = min-max of the round medians" % (n, args.rounds))
        print("# placement: %s" % os.environ.get("RISEML_BENCH_PLACEMENT", "as launched"))
        print("%-15s %6s %12s %18s %12s %18s %7s" % ("op", "bytes", "riseml us", "riseml busbw GB/s",
                                                    "gloo us", "gloo busbw GB/s", "ratio"))
        for op in ops:
            for size in sizes:
                row = []
                for backend in ("riseml", "gloo"):
                    ts = results[(op, size, backend)]
                    med = statistics.median(ts)
                    bw = lambda t: size * bus_factor(op, n) / t / 1e9
                    row.append("%12.1f %18s" % (med * 1e6, "%.2f (%.2f-%.2f)" % (
                        bw(med), bw(max(ts)), bw(min(ts)))))
                ratio = statistics.median(results[(op, size, "gloo")]) / statistics.median(
                    results[(op, size, "riseml")])
                print("%-15s %6s %s %s %6.2fx" % (op, human(size), row[0], row[1], ratio))
        sys.stdout.flush()
    if args.ddp:
        rows = []
        for rnd in range(args.rounds):
            for backend in (["riseml", "gloo"] if rnd % 2 == 0 else ["gloo", "riseml"]):
                t, params = ddp_step_time(groups[backend], args.ddp_steps)
                rows.append((backend, t, params))
        if me == 0:
            for backend in ("riseml", "gloo"):
                ts = [t for b, t, _ in rows if b == backend]
                print("ddp step %-7s %d params (%.0f MB of gradients): median %.1f ms "
                      "(rounds %.1f-%.1f ms)" % (backend, rows[0][2], rows[0][2] * 4 / 1e6,
                                                  statistics.median(ts) * 1e3, min(ts) * 1e3,
                                                  max(ts) * 1e3))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
