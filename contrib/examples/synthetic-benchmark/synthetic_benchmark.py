#!/usr/bin/env python3
"""Horovod's kind of synthetic benchmark, with riseml.torch: a torchvision model trained on
random data, images per second per rank and in total. On a machine with CUDA, as Horovod's
pytorch_synthetic_benchmark.py, the model, the data and the optimizer live on GPU
cuda:<local rank> (so the gradients are allreduced on the GPU); --no-cuda keeps them on the CPU.

    srun -N2 --mpi=pmix python3 synthetic_benchmark.py --model resnet18 --batch-size 16 \
        --image-size 64 --steps 10 [--fp16-allreduce] [--write-workload resnet18.workload]

It first times the same steps without any allreduce, on every rank at once (so the compute is
measured under the same load the real steps see); with --write-workload, rank 0 writes that
step as a riseml-replay workload (the model's gradients in backward order, the measured compute
split by FLOPs), so `riseml-replay FILE` can be set beside this run: both report the step time
and what communication adds to it. RISEML_TIMELINE=file.json records where the engine's time
went (contrib/examples/pytorch-digits/timeline_summary.py sums it).
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
import torchvision

import riseml.torch as hvd


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet18", help="a torchvision.models constructor name")
    p.add_argument("--batch-size", type=int, default=16, help="images per rank and step")
    p.add_argument("--image-size", type=int, default=64, help="side of the random images")
    p.add_argument("--steps", type=int, default=10, help="timed steps")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    p.add_argument("--fp16-allreduce", action="store_true", help="hvd.Compression.fp16")
    p.add_argument("--write-workload", metavar="FILE", help="rank 0 writes the measured step as a workload")
    p.add_argument("--no-cuda", action="store_true", help="train on the CPU even where CUDA is available")
    args = p.parse_args()
    args.cuda = not args.no_cuda and torch.cuda.is_available()
    return args


def main():
    args = parse_args()
    hvd.init()
    torch.manual_seed(1234)
    if args.cuda:
        # One GPU per rank: the local rank's (as Horovod's benchmark pins it).
        device = torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())
        torch.cuda.set_device(device)
        where = f"GPU {torch.cuda.get_device_name(device)} ({device})"
    else:
        device = torch.device("cpu")
        # One core's share per rank: the ranks of a node share its cores.
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // hvd.local_size()))
        where = f"CPU, {torch.get_num_threads()} threads per rank"
    model = getattr(torchvision.models, args.model)(num_classes=1000).to(device)
    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
    target = torch.randint(0, 1000, (args.batch_size,), device=device)
    plain = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size())

    def step(optimizer):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()

    def sync():
        if args.cuda:
            torch.cuda.synchronize(device)  # the kernels a step queued have run

    def timed(optimizer, n):
        times = []
        for _ in range(n):
            sync()
            hvd.barrier()  # all ranks start together
            t = time.perf_counter()
            step(optimizer)
            sync()
            times.append(time.perf_counter() - t)
        return times

    # The compute alone, all ranks at once (no gradient exchange).
    for _ in range(args.warmup):
        step(plain)
    alone = statistics.median(timed(plain, max(3, args.steps // 2)))

    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(plain, named_parameters=model.named_parameters(),
                                         compression=compression)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    for _ in range(args.warmup):
        step(optimizer)
    steps = timed(optimizer, args.steps)
    # The slowest rank's median step.
    step_s = hvd.allreduce(torch.tensor([statistics.median(steps)]), op=hvd.Max, name="step_time").item()
    alone_s = hvd.allreduce(torch.tensor([alone]), op=hvd.Max, name="alone_time").item()

    if hvd.rank() == 0:
        params = sum(p.numel() for p in model.parameters())
        print(f"# synthetic benchmark: {args.model}, {params / 1e6:.2f} M parameters, batch {args.batch_size} "
              f"of {args.image_size}x{args.image_size} per rank, {hvd.size()} ranks, "
              f"fp16 allreduce {'on' if args.fp16_allreduce else 'off'}, on {where}")
        print(f"step alone {alone_s * 1e3:.1f} ms, step {step_s * 1e3:.1f} ms, not hidden "
              f"{(step_s - alone_s) * 1e3:.1f} ms")
        print(f"images/s: {args.batch_size / step_s:.1f} per rank, {args.batch_size * hvd.size() / step_s:.1f} in total")
        print(f"synthetic: model={args.model} ranks={hvd.size()} device={device.type} step_ms={step_s * 1e3:.2f} "
              f"compute_ms={alone_s * 1e3:.2f} efficiency={alone_s / step_s:.4f}")
        if args.write_workload:
            here = os.path.dirname(os.path.abspath(__file__))
            sys.path.insert(0, os.path.join(here, "..", "..", "..", "model", "workloads"))
            from generate_workloads import workload_text
            text, _, _ = workload_text(args.model, getattr(torchvision.models, args.model)(num_classes=1000),
                                       args.image_size, args.batch_size, alone_s * 1e3,
                                       f"measured by synthetic_benchmark.py: {hvd.size()} ranks at once, "
                                       f"{args.image_size}x{args.image_size} on {where}")
            with open(args.write_workload + ".tmp", "w") as f:
                f.write(text)
            os.replace(args.write_workload + ".tmp", args.write_workload)
            print(f"workload written to {args.write_workload}")
    hvd.shutdown()


if __name__ == "__main__":
    main()
