#!/usr/bin/python3
"""The real Horovod (horovod.torch) against riseml.torch on the same script, side by side.

One worker script, two APIs: --api horovod runs `import horovod.torch as hvd`, --api riseml runs
`import riseml.torch as hvd`; everything else is the same code. Rank 0 prints one line,
`RESULT {json}`, with what the tests measured:

  latency  one-float hvd.allreduce (named, as a training loop names its tensors), back to back,
           after a warm-up; every call timed on every rank; p50 and mean per call of the slowest
           rank
  sizes    hvd.allreduce_ in place (Average, float32) of 4 KiB ... 256 MiB, an hvd.barrier()
           before every timed call; per call the slowest rank's time; the median over calls
  fused    64 tensors of 16 KiB handed over with hvd.allreduce_async_ and then synchronized
           (Horovod's tensor fusion); the slowest rank's time per batch; the median over batches
  resnet   Horovod's synthetic benchmark (examples/pytorch/pytorch_synthetic_benchmark.py) with
           torchvision's ResNet-18 on the CPU: hvd.broadcast_parameters + broadcast_optimizer_state,
           hvd.DistributedOptimizer(SGD), random images; images/s of all ranks together. Also
           where a step's time went (forward + backward, in which the hooks submit the gradients,
           against optimizer.step(), which waits for them), the CPU time (all threads) and the
           context switches per step, mean over ranks: they say whether a loss is the API's work
           or the share of the machine the job got

Worker, under either launcher (both bootstraps see HOROVOD_LOCAL_RANK):

    riseml-launch -n 2 -- python tools/bench/horovod_vs_riseml_torch.py --api riseml [--bind]
    horovodrun -np 2 -H localhost:2 --gloo python tools/bench/horovod_vs_riseml_torch.py --api horovod

--bind pins the process to one core (local rank modulo the cores it may use) before torch is
imported, so every thread it starts later (torch's, Horovod's background and Gloo threads,
riseml's engine) stays on that core, as srun --riseml-bind=auto places a task. Every worker runs
torch with one intra-op thread (what the plugin's OMP_NUM_THREADS gives a one-core task).

Driver: one run that alternates fresh processes of both APIs (which goes first alternates every
round) for every placement and prints the table, median and min-max over rounds. At 2 ranks it
runs --tests (all four), at other rank counts --tests4 (latency and resnet) with --latency-calls4
calls:

    python tools/bench/horovod_vs_riseml_torch.py --driver --rounds 5 \
        --launcher build/pmix_bootstrap/riseml-launch --configs unbound:2,bound:2,unbound:4,bound:4

Horovod is started with `horovodrun ... --gloo` from the PATH (the venv's bin), riseml with
riseml-launch; both run the same Python (this one's, sys.executable) with the same environment.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

KIB = 1 << 10
MIB = 1 << 20


def parse_size(text):
    units = {"K": KIB, "M": MIB, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def human(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %siB" % (n >> shift, unit)
    return "%d B" % n


# ---------------------------------------------------------------------------------------------
# The worker: identical for both APIs except for the import.
# ---------------------------------------------------------------------------------------------

def bind_self():
    cores = sorted(os.sched_getaffinity(0))
    local_rank = int(os.environ.get("HOROVOD_LOCAL_RANK", "0"))
    core = cores[local_rank % len(cores)]
    os.sched_setaffinity(0, {core})
    return core


def sizes_iters(nbytes):
    # The same count on every rank; large sizes fewer calls (256 MiB through Gloo is ~0.5 s).
    if nbytes <= 64 * KIB:
        return 200
    if nbytes <= MIB:
        return 50
    if nbytes <= 16 * MIB:
        return 10
    return 4


def worker(args):
    core = bind_self() if args.bind else None
    import torch
    torch.set_num_threads(1)
    if args.api == "horovod":
        import horovod.torch as hvd
    else:
        import riseml.torch as hvd
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    tests = args.tests.split(",")
    result = {"api": args.api, "size": size, "bind": args.bind, "torch": torch.__version__,
              "api_version": getattr(hvd, "__version__", None)}
    if args.api == "horovod":
        import horovod
        result["api_version"] = horovod.__version__

    def slowest(samples, name):
        # Per sample the slowest rank's value (every rank gets it).
        t = torch.tensor(samples, dtype=torch.float64)
        return hvd.allreduce(t, op=hvd.Max, name=name).tolist()

    if "latency" in tests:
        x = torch.ones(1)
        for _ in range(args.latency_warmup):
            hvd.allreduce(x, name="one_float")
        samples = []
        perf = time.perf_counter
        t_all = perf()
        for _ in range(args.latency_calls):
            t0 = perf()
            hvd.allreduce(x, name="one_float")
            samples.append(perf() - t0)
        t_all = perf() - t_all
        samples.sort()
        mine = [samples[len(samples) // 2] * 1e6, t_all / args.latency_calls * 1e6,
                samples[int(0.9 * (len(samples) - 1))] * 1e6]
        p50, mean, p90 = slowest(mine, "latency_result")
        result["latency_p50_us"] = p50
        result["latency_mean_us"] = mean
        result["latency_p90_us"] = p90

    if "sizes" in tests:
        out = {}
        for text in args.sizes.split(","):
            nbytes = parse_size(text)
            x = torch.ones(nbytes // 4, dtype=torch.float32)
            name = "size_%d" % nbytes
            hvd.allreduce_(x, name=name)  # warm-up (buffers, response cache)
            samples = []
            for _ in range(sizes_iters(nbytes)):
                hvd.barrier()
                t0 = time.perf_counter()
                hvd.allreduce_(x, name=name)
                samples.append(time.perf_counter() - t0)
            out[str(nbytes)] = statistics.median(slowest(samples, name + "_result"))
            del x
        result["sizes_s"] = out

    if "fused" in tests:
        tensors = [torch.ones(args.fused_bytes // 4) for _ in range(args.fused_count)]
        names = ["fused.%d" % i for i in range(args.fused_count)]

        def batch():
            handles = [hvd.allreduce_async_(t, name=n) for t, n in zip(tensors, names)]
            for h in handles:
                hvd.synchronize(h)

        for _ in range(5):
            batch()
        samples = []
        for _ in range(args.fused_batches):
            hvd.barrier()
            t0 = time.perf_counter()
            batch()
            samples.append(time.perf_counter() - t0)
        result["fused_s"] = statistics.median(slowest(samples, "fused_result"))

    if "resnet" in tests:
        import torch.nn.functional as F
        import torchvision
        torch.manual_seed(0)
        model = torchvision.models.resnet18(num_classes=1000)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * size)
        optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(optimizer, root_rank=0)
        data = torch.randn(args.batch_size, 3, args.image_size, args.image_size)
        target = torch.randint(0, 1000, (args.batch_size,))

        split = [0.0, 0.0]  # forward + backward (the hooks submit), optimizer.step() (the waits)

        def step():
            t0 = time.perf_counter()
            optimizer.zero_grad()
            loss = F.cross_entropy(model(data), target)
            loss.backward()
            t1 = time.perf_counter()
            optimizer.step()
            split[0] += t1 - t0
            split[1] += time.perf_counter() - t1

        for _ in range(args.warmup_batches):
            step()
        rates = []
        split[:] = [0.0, 0.0]
        usage0 = resource.getrusage(resource.RUSAGE_SELF)
        for _ in range(args.num_iters):
            t0 = time.perf_counter()
            for _ in range(args.batches_per_iter):
                step()
            rates.append(args.batch_size * args.batches_per_iter / (time.perf_counter() - t0))
        usage1 = resource.getrusage(resource.RUSAGE_SELF)
        steps = args.num_iters * args.batches_per_iter
        # Per step, mean over ranks: where a rank's time went, and the CPU it used (all threads).
        mine = [split[0] / steps * 1e3, split[1] / steps * 1e3,
                (usage1.ru_utime - usage0.ru_utime) / steps * 1e3,
                (usage1.ru_stime - usage0.ru_stime) / steps * 1e3,
                (usage1.ru_nvcsw - usage0.ru_nvcsw) / steps,
                (usage1.ru_nivcsw - usage0.ru_nivcsw) / steps]
        means = hvd.allreduce(torch.tensor(mine, dtype=torch.float64), op=hvd.Sum,
                              name="resnet_split").div(size).tolist()
        for key, value in zip(("fwd_bwd_ms", "step_ms", "user_ms", "sys_ms", "vcsw", "ivcsw"), means):
            result["resnet_" + key] = value
        # Images/s of the whole job: the slowest rank's rate (the steps are in lockstep) x size.
        rate = statistics.median(rates)
        slow = hvd.allreduce(torch.tensor([-rate], dtype=torch.float64), op=hvd.Max,
                             name="resnet_result").item()
        result["resnet_img_s"] = -slow * size
        result["resnet_params"] = sum(p.numel() for p in model.parameters())

    if rank == 0:
        if core is not None:
            result["core0"] = core
        print("RESULT " + json.dumps(result), flush=True)
    hvd.shutdown()


# ---------------------------------------------------------------------------------------------
# The driver: fresh processes, alternating APIs, the table.
# ---------------------------------------------------------------------------------------------

def worker_args(args, bind, tests, ranks):
    calls = args.latency_calls if ranks == 2 else args.latency_calls4
    out = ["--tests", tests, "--latency-calls", str(calls),
           "--latency-warmup", str(args.latency_warmup), "--sizes", args.sizes,
           "--fused-count", str(args.fused_count), "--fused-bytes", str(args.fused_bytes),
           "--fused-batches", str(args.fused_batches), "--batch-size", str(args.batch_size),
           "--image-size", str(args.image_size), "--warmup-batches", str(args.warmup_batches),
           "--batches-per-iter", str(args.batches_per_iter), "--num-iters", str(args.num_iters)]
    return out + (["--bind"] if bind else [])


def launch(args, api, placement, ranks, tests):
    script = os.path.abspath(__file__)
    py = sys.executable
    common = [py, script, "--api", api] + worker_args(args, placement == "bound", tests, ranks)
    if api == "riseml":
        cmd = [args.launcher, "-n", str(ranks), "--timeout", str(args.timeout), "--"] + common
    else:
        cmd = [args.horovodrun, "-np", str(ranks), "-H", "localhost:%d" % ranks, "--gloo"] + common
    load = os.getloadavg()[0]
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=args.timeout + 30)
        output, rc = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as e:
        output = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc = 124
    wall = time.time() - t0
    for line in output.splitlines():
        at = line.find("RESULT {")
        if at >= 0:
            res = json.loads(line[at + len("RESULT "):])
            res["wall_s"] = wall
            res["load1"] = load
            return res, " ".join(cmd)
    sys.stderr.write("FAILED (rc %d, %.1f s): %s\n%s\n" % (rc, wall, " ".join(cmd), output[-3000:]))
    return None, " ".join(cmd)


def rows_of(res, ranks):
    # (row label, value, unit, lower_is_better)
    rows = []
    if "latency_p50_us" in res:
        rows.append(("1-float allreduce p50", res["latency_p50_us"], "us", True))
        rows.append(("1-float allreduce mean", res["latency_mean_us"], "us", True))
    for nbytes, sec in sorted(res.get("sizes_s", {}).items(), key=lambda kv: int(kv[0])):
        n = int(nbytes)
        rows.append(("allreduce %s" % human(n), sec * 1e3, "ms", True))
    if "fused_s" in res:
        rows.append(("fused %dx%s" % (res.get("fused_count", 64), human(res.get("fused_bytes", 16 * KIB))),
                     res["fused_s"] * 1e3, "ms/batch", True))
    if "resnet_img_s" in res:
        rows.append(("ResNet-18 synthetic", res["resnet_img_s"], "img/s", False))
        if "resnet_fwd_bwd_ms" in res:
            # Where a step's time goes (mean over ranks): diagnostics, not goals.
            rows.append(("  fwd+bwd per step", res["resnet_fwd_bwd_ms"], "ms", True))
            rows.append(("  optimizer.step()", res["resnet_step_ms"], "ms", True))
            rows.append(("  CPU user+sys per step", res["resnet_user_ms"] + res["resnet_sys_ms"], "ms", True))
            rows.append(("  ctx switches per step", res["resnet_vcsw"] + res["resnet_ivcsw"], "", True))
            # The share of the machine's CPUs the job's processes got while training.
            wall = res["resnet_fwd_bwd_ms"] + res["resnet_step_ms"]
            share = ranks * (res["resnet_user_ms"] + res["resnet_sys_ms"]) / (wall * os.cpu_count())
            rows.append(("  CPU share of the machine", 100 * share, "%", False))
            # Images per CPU-second of the job: the work each API costs, whatever share it got.
            cpu_s = (res["resnet_user_ms"] + res["resnet_sys_ms"]) / 1e3
            rows.append(("  images per CPU-second", res.get("batch_size", 16) / cpu_s, "img/s", False))
    return rows


def fmt(v):
    if v >= 1000:
        return "%.0f" % v
    if v >= 100:
        return "%.1f" % v
    if v >= 10:
        return "%.2f" % v
    return "%.3f" % v


def driver(args):
    configs = []
    for item in args.configs.split(","):
        placement, ranks = item.split(":")
        assert placement in ("unbound", "bound"), placement
        tests = args.tests if int(ranks) == 2 else args.tests4
        configs.append((placement, int(ranks), tests))
    results = {c: {"horovod": [], "riseml": []} for c in configs}
    commands = {}
    t_start = time.time()
    for r in range(args.rounds):
        for i, (placement, ranks, tests) in enumerate(configs):
            order = ("riseml", "horovod") if (r + i) % 2 == 0 else ("horovod", "riseml")
            for api in order:
                res, cmd = launch(args, api, placement, ranks, tests)
                commands[(placement, ranks, api)] = cmd
                if res is not None:
                    res["fused_count"], res["fused_bytes"] = args.fused_count, args.fused_bytes
                    res["batch_size"] = args.batch_size
                    results[(placement, ranks, tests)][api].append(res)
                print("# round %d %-7s %d ranks %-7s %s (%.1f s)" % (
                    r + 1, placement, ranks, api, "ok" if res else "FAILED",
                    res["wall_s"] if res else 0), file=sys.stderr, flush=True)
    total = time.time() - t_start
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"%s:%d" % (p, n): v for (p, n, _), v in results.items()}, f, indent=1)

    print("# horovod.torch (Horovod %s, Gloo, horovodrun --gloo) vs riseml.torch (riseml-launch), "
          "torch %s, %d rounds of fresh processes, APIs alternating" % (
              next((x["api_version"] for v in results.values() for x in v["horovod"]), "?"),
              next((x["torch"] for v in results.values() for x in v["riseml"] + v["horovod"]), "?"),
              args.rounds))
    print("# value = median over rounds (min-max); ratio = horovod time / riseml time "
          "(for img/s: riseml / horovod), > 1 means riseml is ahead")
    for (placement, ranks, tests), by_api in results.items():
        label = {"unbound": "unbound", "bound": "bound, one core per rank"}[placement]
        if placement == "bound" and ranks > os.cpu_count():
            label = "bound, %d ranks per core" % (ranks // os.cpu_count())
        if ranks > os.cpu_count():
            label += ", %d ranks on %d cores (oversubscribed)" % (ranks, os.cpu_count())
        print("#")
        print("# %d ranks, %s; rounds ok: horovod %d, riseml %d" % (
            ranks, label, len(by_api["horovod"]), len(by_api["riseml"])))
        loads = [x["load1"] for v in by_api.values() for x in v]
        if loads:
            print("# load average (1 min) at the launches: median %.1f, %.1f-%.1f" % (
                statistics.median(loads), min(loads), max(loads)))
        print("%-26s %-9s %28s %28s %8s" % ("row", "unit", "horovod", "riseml", "ratio"))
        per_row = {}
        for api in ("horovod", "riseml"):
            for res in by_api[api]:
                for name, value, unit, lower in rows_of(res, ranks):
                    per_row.setdefault((name, unit, lower), {"horovod": [], "riseml": []})[api].append(value)
        for (name, unit, lower), vals in per_row.items():
            cells = []
            meds = {}
            for api in ("horovod", "riseml"):
                v = vals[api]
                if not v:
                    cells.append("-")
                    continue
                meds[api] = statistics.median(v)
                cells.append("%s (%s-%s)" % (fmt(meds[api]), fmt(min(v)), fmt(max(v))))
            ratio = "-"
            if len(meds) == 2:
                q = meds["horovod"] / meds["riseml"] if lower else meds["riseml"] / meds["horovod"]
                ratio = "%.2fx" % q
            print("%-26s %-9s %28s %28s %8s" % (name, unit, cells[0], cells[1], ratio))
    print("#")
    print("# total wall time of the runs: %.1f min" % (total / 60))
    for (placement, ranks, api), cmd in sorted(commands.items()):
        print("# %s %d %s: %s" % (placement, ranks, api, cmd))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--api", choices=("horovod", "riseml"))
    p.add_argument("--driver", action="store_true", help="run both APIs in rounds, print the table")
    p.add_argument("--bind", action="store_true", help="pin to one core (local rank mod cores)")
    p.add_argument("--tests", default="latency,sizes,fused,resnet",
                   help="worker: which tests; driver: the tests at 2 ranks")
    p.add_argument("--tests4", default="latency,resnet", help="driver: the tests at other rank counts")
    p.add_argument("--latency-calls", type=int, default=1000)
    p.add_argument("--latency-calls4", type=int, default=300,
                   help="driver: --latency-calls at other rank counts (Horovod takes ~20 ms a call at 4)")
    p.add_argument("--latency-warmup", type=int, default=100)
    p.add_argument("--sizes", default="4K,64K,1M,16M,256M")
    p.add_argument("--fused-count", type=int, default=64)
    p.add_argument("--fused-bytes", type=int, default=16 * KIB)
    p.add_argument("--fused-batches", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--warmup-batches", type=int, default=5)
    p.add_argument("--batches-per-iter", type=int, default=5)
    p.add_argument("--num-iters", type=int, default=3)
    # driver only
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--configs", default="unbound:2,bound:2,unbound:4,bound:4",
                   help="placement:ranks, placement unbound or bound")
    p.add_argument("--launcher", default="riseml-launch", help="riseml-launch to start riseml ranks")
    p.add_argument("--horovodrun", default="horovodrun")
    p.add_argument("--timeout", type=int, default=300, help="seconds per launch")
    p.add_argument("--json", help="driver: write every round's results here")
    args = p.parse_args()
    if args.driver:
        driver(args)
    elif args.api:
        worker(args)
    else:
        p.error("--api or --driver")


if __name__ == "__main__":
    main()
