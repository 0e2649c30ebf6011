#!/usr/bin/env python3
"""DistributedDataParallel training of a small MLP on scikit-learn's digits, as in PyTorch's DDP
tutorial; the one riseml line is the import, the backend is a name.

    riseml-launch -n 2 python3 train.py                 (backend riseml, PMIx: no MASTER_ADDR)
    srun --mpi=pmix python3 train.py --backend gloo      (gloo too gets its environment)
    MASTER_ADDR=... MASTER_PORT=... RANK=... WORLD_SIZE=... python3 train.py   (env:// as usual)

--zero shards the optimizer state over the ranks (torch's ZeroRedundancyOptimizer). The last
line rank 0 prints is JSON: {"epochs", "loss", "accuracy", "backend", "world_size"}.
"""
import argparse
import json
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import riseml.torch.distributed  # noqa: F401  the "riseml" backend; env:// from the launcher


def digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.tensor(d.data, dtype=torch.float32) / 16.0
    y = torch.tensor(d.target, dtype=torch.int64)
    return TensorDataset(x[:1500], y[:1500]), TensorDataset(x[1500:], y[1500:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default=os.environ.get("RISEML_TORCH_BACKEND", "riseml"),
                        help="riseml (default), gloo or nccl; riseml.yml's torch_distributed.backend")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32, help="per process")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--zero", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    train, test = digits()
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True,
                                 seed=args.seed)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 10)))
    if args.zero:
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD,
                                      lr=args.lr, momentum=0.9)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        total = torch.zeros(2, dtype=torch.float64)
        for x, y in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            total += torch.tensor([loss.item() * len(y), len(y)], dtype=torch.float64)
        dist.all_reduce(total)
        model.eval()
        with torch.no_grad():
            x, y = test.tensors
            accuracy = (model(x).argmax(1) == y).float().mean().item()
        mean_loss = (total[0] / total[1]).item()
        if rank == 0:
            print("epoch %d loss %.6f accuracy %.4f" % (epoch + 1, mean_loss, accuracy),
                  flush=True)
    if rank == 0:
        print(json.dumps({"epochs": args.epochs, "loss": mean_loss, "accuracy": accuracy,
                          "backend": args.backend, "world_size": world}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
