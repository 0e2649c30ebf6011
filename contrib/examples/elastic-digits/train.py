#!/usr/bin/env python3
"""Elastic data-parallel training of the digits MLP (../pytorch-digits) with riseml.torch and
Horovod's elastic API: when a worker dies (its node is lost), the others go back to the last
commit, re-form the world without it and finish the training, without a restart or a requeue.

    riseml-launch --elastic -n 3 python3 train.py --epochs 10

What makes it elastic, as in Horovod's elastic examples:
  - the training state (model, optimizer, sampler, epoch, batch) is an hvd.elastic.TorchState,
    committed to host memory every --commit-every batches and at the end of every epoch;
  - the training loop is a function under @hvd.elastic.run: when a collective fails, the
    survivors restore the last commit, re-form the world, take rank 0's state and call it again;
  - an ElasticSampler deals out each epoch's samples; after a reset it deals what the epoch has
    not processed yet among the ranks there are now;
  - a reset callback scales the learning rate to the new number of workers.

Fault experiments: --fault kill|stop --fault-rank R --fault-at-epoch E makes rank R SIGKILL or
SIGSTOP itself at the start of epoch E (or after --fault-at-batch B of its batches), once: only
in the world of the starting size;
--report FILE: rank 0 writes a JSON summary (sizes, accuracy, recovery time, steps redone).
Without scikit-learn (python3-sklearn) it trains on a synthetic data set.
"""
import argparse
import json
import os
import signal
import sys
import time

import torch
import torch.nn.functional as F

import riseml.torch as hvd


def load_data(seed):
    try:
        from sklearn.datasets import load_digits
        digits = load_digits()
        x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
        y = torch.tensor(digits.target, dtype=torch.int64)
    except ImportError:
        print("scikit-learn not installed: using synthetic data", file=sys.stderr)
        g = torch.Generator().manual_seed(seed)  # the same data as ../pytorch-digits
        centers = torch.randn(10, 64, generator=g)
        y = torch.randint(0, 10, (1800,), generator=g)
        x = centers[y] + 2.0 * torch.randn(1800, 64, generator=g)
    return x[:1500], y[:1500], x[1500:], y[1500:]


def evaluate(model, x, y):
    model.eval()
    with torch.no_grad():
        out = model(x)
    return F.cross_entropy(out, y).item(), (out.argmax(1) == y).float().mean().item()


def fault(args):
    """The test hook: this rank dies (kill) or hangs (stop), as when its node is lost."""
    if args.fault_time_file:
        with open(args.fault_time_file, "w") as f:
            f.write(repr(time.time()))
    os.kill(os.getpid(), signal.SIGKILL if args.fault == "kill" else signal.SIGSTOP)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=32, help="samples per process and step")
    p.add_argument("--lr", type=float, default=0.05, help="learning rate of one process")
    p.add_argument("--commit-every", type=int, default=5, help="batches between commits")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--fault", choices=["kill", "stop"])
    p.add_argument("--fault-rank", type=int, default=0)
    p.add_argument("--fault-at-epoch", type=int, default=1, help="1 = the first epoch")
    p.add_argument("--fault-at-batch", type=int, default=0,
                   help="after this many batches of the epoch (0: at its start)")
    p.add_argument("--fault-time-file", default="", help="the faulty rank writes its time here")
    p.add_argument("--report", default="", help="rank 0 writes a JSON summary here")
    args = p.parse_args()

    hvd.init()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // hvd.local_size()))
    x_train, y_train, x_test, y_test = load_data(args.seed)
    train_set = torch.utils.data.TensorDataset(x_train, y_train)
    # Not a DistributedSampler: this one can re-deal the rest of an epoch after a reset.
    sampler = hvd.elastic.ElasticSampler(train_set, shuffle=True, seed=args.seed)
    loader = torch.utils.data.DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)

    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(), momentum=0.9)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())

    # No broadcast here: hvd.elastic.run syncs the state from rank 0 before it trains, and
    # again after every reset. `steps` counts the steps of the committed history.
    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0, batch=0, steps=0)

    start_size = hvd.size()
    resets = []                          # the size after each reset
    trained, recovered_at = 0, None      # steps this process ran; its first after a reset

    def on_reset():
        # The global batch is batch_size * size: keep the learning rate in proportion.
        for group in optimizer.param_groups:
            group["lr"] = args.lr * hvd.size()
        # Deal the rest of the epoch among the new ranks (no sync follows when hosts were only
        # removed, and the sampler would go on with the old partition).
        sampler.reset()
        resets.append(hvd.size())

    state.register_reset_callbacks([on_reset])

    @hvd.elastic.run
    def train(state):
        nonlocal trained, recovered_at
        while state.epoch < args.epochs:
            model.train()
            for x, y in loader:  # this rank's share of what the epoch has not processed yet
                if (args.fault and hvd.size() == start_size and hvd.rank() == args.fault_rank
                        and (state.epoch + 1, state.batch) == (args.fault_at_epoch,
                                                              args.fault_at_batch)):
                    fault(args)
                optimizer.zero_grad()
                F.cross_entropy(model(x), y).backward()
                optimizer.step()
                trained += 1
                if resets and recovered_at is None:
                    recovered_at = time.time()
                state.batch += 1
                state.steps += 1
                sampler.record_batch(state.batch, len(x))
                # A commit copies the state (cost per commit); a failure redoes the batches
                # since the last one (cost per failure).
                if state.batch % args.commit_every == 0:
                    state.commit()
            if hvd.rank() == 0:  # every rank has the same weights
                loss, accuracy = evaluate(model, x_test, y_test)
                print("epoch %d: size %d, test loss %.4f, test accuracy %.3f"
                      % (state.epoch + 1, hvd.size(), loss, accuracy), flush=True)
            # set_epoch at the end, not the start: a restore must not replay a finished epoch.
            state.epoch += 1
            state.batch = 0
            sampler.set_epoch(state.epoch)
            state.commit()

    train(state)

    if hvd.rank() == 0:
        loss, accuracy = evaluate(model, x_test, y_test)
        print("final accuracy %.3f size %d" % (accuracy, hvd.size()), flush=True)
        if args.report:
            recovery = None
            if args.fault_time_file and recovered_at and os.path.exists(args.fault_time_file):
                with open(args.fault_time_file) as f:
                    recovery = recovered_at - float(f.read())
            with open(args.report, "w") as f:
                json.dump({"start_size": start_size, "final_size": hvd.size(),
                           "epochs": state.epoch, "accuracy": accuracy, "loss": loss,
                           "resets": resets, "recovery_s": recovery, "steps": state.steps,
                           "steps_redone": trained - state.steps}, f, indent=1)
    hvd.shutdown()


if __name__ == "__main__":
    main()
