#!/usr/bin/python3
"""One float through the engine: the round trip of a small hvd.allreduce and of hvd.barrier,
each call timed, idle or beside a training-like load.

    riseml-launch -n 2 /usr/bin/python3 tools/bench/engine_small_call_bench.py \
        [--calls 3000] [--load] [--load-rate 25]
    mpirun --bind-to core -np 2 -x PYTHONPATH /usr/bin/python3 tools/bench/engine_small_call_bench.py

--load starts a second thread on every rank that reduces two 16 MiB float32 tensors in a loop
(large fused calls, as a backward pass hands the engine); --load-rate N holds it to N iterations
a second (it sleeps until its next start), so runs of different builds can be compared at the
same load. Rank 0 prints one line: the allreduce's p10/p50/p90/mean and the barrier's p50/p90
in microseconds, and the load's iterations per second.
"""
import argparse
import statistics
import threading
import time

import torch

import riseml.torch as hvd


def percentile(values, q):
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))] * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000, help="timed allreduces (barriers: a third)")
    parser.add_argument("--load", action="store_true", help="two 16 MiB allreduces in a loop beside")
    parser.add_argument("--load-rate", type=float, default=0.0,
                        help="the load's iterations per second (0: as fast as it goes)")
    args = parser.parse_args()
    if args.calls < 3:
        parser.error("--calls must be at least 3")
    if args.load_rate < 0:
        parser.error("--load-rate must be 0 or more")
    hvd.init()
    stop = threading.Event()
    load_iterations = [0]

    def load():
        a, b = torch.ones(4 << 20), torch.ones(4 << 20)
        next_start = time.perf_counter()
        while True:
            # Every rank's load ends after the same iteration: they agree on it each time.
            wants_stop = torch.tensor([1 if stop.is_set() else 0], dtype=torch.int32)
            if hvd.allreduce(wants_stop, name="load_stop", op=hvd.Max).item():
                break
            hvd.allreduce(a, name="load_a", op=hvd.Sum)
            hvd.allreduce(b, name="load_b", op=hvd.Sum)
            load_iterations[0] += 1
            if args.load_rate:
                next_start += 1.0 / args.load_rate
                pause = next_start - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)

    if args.load:
        loader = threading.Thread(target=load)
        load_started = time.perf_counter()
        loader.start()
        time.sleep(0.5)
    x = torch.ones(1)
    for _ in range(200):
        hvd.allreduce(x, name="warm_up", op=hvd.Sum)
    calls = []
    for _ in range(args.calls):
        t0 = time.perf_counter()
        hvd.allreduce(x, name="small", op=hvd.Sum)
        calls.append(time.perf_counter() - t0)
    barriers = []
    for _ in range(args.calls // 3):
        t0 = time.perf_counter()
        hvd.barrier()
        barriers.append(time.perf_counter() - t0)
    rate = ""
    if args.load:
        stop.set()
        loader.join()
        rate = "; load %.0f iterations/s" % (load_iterations[0] / (time.perf_counter() - load_started))
    if hvd.rank() == 0:
        print("ranks %d load %s: allreduce p10 %.1f p50 %.1f p90 %.1f mean %.1f us; "
              "barrier p50 %.1f p90 %.1f us%s"
              % (hvd.size(), ("%g/s" % args.load_rate if args.load_rate else "full") if args.load
                 else "none", percentile(calls, .1), percentile(calls, .5), percentile(calls, .9),
                 statistics.mean(calls) * 1e6, percentile(barriers, .5), percentile(barriers, .9),
                 rate), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
