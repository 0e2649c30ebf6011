#!/usr/bin/env python3
"""Data-parallel training of a small MLP on scikit-learn's digits (8x8 images, 10 classes) with
riseml.torch, following Horovod's six steps:

  1. hvd.init()
  2. pin one device per process (the GPU of the local rank; on CPUs, a share of the cores)
  3. scale the learning rate by the number of processes (the global batch grows with them)
  4. wrap the optimizer in hvd.DistributedOptimizer
  5. broadcast the initial model and optimizer state from rank 0
  6. checkpoint on rank 0 only (atomically), and resume from the last checkpoint

Preemption-safe (riseml.preemption): when Slurm signals the time limit ahead (riseml.yml's
slurm: {signal: USR1@60, requeue: true}), every rank stops after the same step, rank 0 writes
a checkpoint of that step, the job requeues itself and the requeued run resumes at that step,
so every epoch runs exactly once.

    riseml-launch -n 4 python3 train.py --epochs 5 --checkpoint-dir ckpt
    srun --mpi=pmix python3 train.py ...      (what `riseml submit` writes)

Each step takes one global batch of batch_size * size samples (the same permutation on every
rank); rank r trains on its r-th slice. Gradients are averaged, so N processes follow the loss
curve of one process that takes the whole global batch with the same learning rate.
Without scikit-learn (python3-sklearn) it falls back to a synthetic data set (--data synthetic).
"""
import argparse
import glob
import json
import os
import re
import sys
import time

import torch
import torch.nn.functional as F

import riseml.torch as hvd
from riseml.preemption import PreemptionGuard, restart_count


def load_data(kind, seed):
    if kind == "digits":
        try:
            from sklearn.datasets import load_digits
            digits = load_digits()
            x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
            y = torch.tensor(digits.target, dtype=torch.int64)
            return x[:1500], y[:1500], x[1500:], y[1500:]
        except ImportError:
            print("scikit-learn not installed: using synthetic data", file=sys.stderr)
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(10, 64, generator=g)
    y = torch.randint(0, 10, (1800,), generator=g)
    x = centers[y] + 2.0 * torch.randn(1800, 64, generator=g)
    return x[:1500], y[:1500], x[1500:], y[1500:]


def make_model(hidden):
    return torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, 10))


def latest_checkpoint(directory):
    """(epoch, step, path) of the newest complete checkpoint, or (0, 0, None).
    checkpoint-E.pt: after E epochs; checkpoint-E-stepS.pt: after S more steps of epoch E+1
    (written when the job was stopped before its time limit)."""
    best = (0, 0, None)
    for path in glob.glob(os.path.join(directory, "checkpoint-*.pt")):
        m = re.fullmatch(r"checkpoint-(\d+)(?:-step(\d+))?\.pt", os.path.basename(path))
        if m and (int(m.group(1)), int(m.group(2) or 0)) > best[:2]:
            best = (int(m.group(1)), int(m.group(2) or 0), path)
    return best


def save_checkpoint(directory, epoch, model, optimizer, history, step=0):
    """Rank 0 only: written to a temporary file, flushed, then renamed, so a crash never
    leaves a half-written checkpoint under the real name."""
    os.makedirs(directory, exist_ok=True)
    name = "checkpoint-%d.pt" % epoch if step == 0 else "checkpoint-%d-step%d.pt" % (epoch, step)
    final = os.path.join(directory, name)
    tmp = final + ".tmp.%d" % os.getpid()
    with open(tmp, "wb") as f:
        torch.save({"epoch": epoch, "step": step, "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(), "history": history}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, final)
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=32, help="samples per process and step")
    p.add_argument("--lr", type=float, default=0.05, help="learning rate of one process")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--data", choices=["digits", "synthetic"], default="digits")
    p.add_argument("--checkpoint-dir", default="", help="save and resume here (rank 0 writes)")
    p.add_argument("--fp16-allreduce", action="store_true", help="Compression.fp16")
    p.add_argument("--history-json", default="", help="rank 0 writes the per-step losses here")
    p.add_argument("--hidden", type=int, default=64, help="width of the hidden layer")
    p.add_argument("--timing", action="store_true",
                   help="rank 0 prints the mean time per step (all epochs but the first)")
    p.add_argument("--check-initial-weights", action="store_true",
                   help="verify that every rank starts from identical weights")
    p.add_argument("--step-delay", type=float, default=0.0,
                   help="sleep this long after each step (a demo job that lasts long enough "
                        "to be preempted)")
    args = p.parse_args()

    # 1. Initialise: rank, size and the engine, from srun / mpirun / riseml-launch.
    hvd.init()
    # Slurm's warning before the time limit (SIGUSR1): stop, checkpoint, requeue, resume.
    guard = PreemptionGuard()

    # 2. Pin a device: the local rank's GPU, or on CPUs an equal share of the cores.
    if torch.cuda.is_available():
        # Modulo: with one GPU visible per task (CUDA_VISIBLE_DEVICES from the SPANK plugin)
        # every rank takes device 0.
        gpu = hvd.local_rank() % torch.cuda.device_count()
        torch.cuda.set_device(gpu)
        device = torch.device("cuda", gpu)
    else:
        device = torch.device("cpu")
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // hvd.local_size()))

    x_train, y_train, x_test, y_test = load_data(args.data, args.seed)

    # Deliberately different initial weights per rank: step 5 makes them equal.
    torch.manual_seed(args.seed + hvd.rank())
    model = make_model(args.hidden).to(device)

    # 3. Scale the learning rate: the global batch is batch_size * size.
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(),
                                momentum=args.momentum)

    # 6 (first half). Resume from the last checkpoint: rank 0 reads it, step 5 spreads it.
    start_epoch, start_step, history = 0, 0, []
    if hvd.rank() == 0 and args.checkpoint_dir:
        epoch, step, path = latest_checkpoint(args.checkpoint_dir)
        if path:
            state = torch.load(path, map_location=device)
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            start_epoch, start_step, history = state["epoch"], state.get("step", 0), state["history"]
            print("resuming from %s (epoch %d%s)%s" % (
                path, start_epoch, ", step %d" % start_step if start_step else "",
                " after requeue %d" % restart_count() if restart_count() else ""), flush=True)
    start_epoch, start_step, history = hvd.broadcast_object((start_epoch, start_step, history),
                                                            root_rank=0)

    # 4. Wrap the optimizer: gradients are averaged over the ranks during backward().
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression)

    # 5. Broadcast the initial state from rank 0.
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    if args.check_initial_weights:
        mine = [t.detach().cpu() for t in model.state_dict().values()]
        for r, theirs in enumerate(hvd.allgather_object(mine)):
            if not all(torch.equal(a, b) for a, b in zip(mine, theirs)):
                raise SystemExit("rank %d: initial weights differ from rank %d's" % (hvd.rank(), r))
        print("rank %d: initial weights identical on %d ranks" % (hvd.rank(), hvd.size()),
              flush=True)

    global_batch = args.batch_size * hvd.size()
    steps_per_epoch = len(x_train) // global_batch
    step_times = []
    for epoch in range(start_epoch, args.epochs):
        model.train()
        order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(
            args.seed * 1000 + epoch))
        first_step = start_step if epoch == start_epoch else 0
        for step in range(first_step, steps_per_epoch):
            started = time.perf_counter()
            batch = order[step * global_batch:(step + 1) * global_batch]
            mine = batch[hvd.rank() * args.batch_size:(hvd.rank() + 1) * args.batch_size]
            x, y = x_train[mine].to(device), y_train[mine].to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            # The global batch's loss: the mean of the ranks' means (equal slices).
            history.append(hvd.allreduce(loss.detach(), name="loss").item())
            if epoch > start_epoch:
                step_times.append(time.perf_counter() - started)
            if args.step_delay:
                time.sleep(args.step_delay)
            # One allreduce of a flag: every rank stops after this same step.
            if guard.should_stop():
                if hvd.rank() == 0 and args.checkpoint_dir:
                    save_checkpoint(args.checkpoint_dir, epoch, model, optimizer, history,
                                    step=step + 1)
                    print("stopping after epoch %d step %d (%s): checkpoint written" % (
                        epoch + 1, step + 1, guard.received or "another rank's signal"),
                        flush=True)
                hvd.barrier()  # the checkpoint exists before anyone asks for the requeue
                guard.requeue()
        model.eval()
        with torch.no_grad():
            correct = (model(x_test.to(device)).argmax(1) == y_test.to(device)).float().mean()
        accuracy = hvd.allreduce(correct, name="accuracy").item()
        if hvd.rank() == 0:
            print("epoch %d: loss %.4f, test accuracy %.3f" % (epoch + 1, history[-1], accuracy),
                  flush=True)
            if args.checkpoint_dir:
                # 6. Checkpoint on rank 0 only.
                save_checkpoint(args.checkpoint_dir, epoch + 1, model, optimizer, history)
        hvd.barrier()  # nobody starts the next epoch (or exits) before the checkpoint exists

    if hvd.rank() == 0 and args.timing and step_times:
        print("timing: %d processes, %d steps, %.3f ms per step, %d parameters" % (
            hvd.size(), len(step_times), 1000 * sum(step_times) / len(step_times),
            sum(p.numel() for p in model.parameters())), flush=True)
    if hvd.rank() == 0 and args.history_json:
        with open(args.history_json, "w") as f:
            json.dump({"size": hvd.size(), "losses": history}, f)
    hvd.shutdown()


if __name__ == "__main__":
    main()
