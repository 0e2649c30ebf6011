#!/usr/bin/env python3
"""Lightning's Trainer on scikit-learn's digits with DDP over the riseml backend: the riseml
lines are the import and process_group_backend="riseml". Lightning finds ranks, nodes and the
rendezvous itself: under srun from Slurm's variables (its SLURMEnvironment; MASTER_ADDR and
MASTER_PORT from the SPANK plugin when it is on), under torchrun from torchrun's.

    srun -N2 --ntasks-per-node=2 python3 train.py --nodes 2 --tasks-per-node 2
    torchrun --nproc-per-node 2 train.py --tasks-per-node 2

The last line rank 0 prints is JSON: {"epochs", "loss", "accuracy", "backend", "world_size"}.
"""
import argparse
import json

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.strategies import DDPStrategy
from torch.utils.data import DataLoader, TensorDataset

import riseml.torch.distributed  # noqa: F401  registers the "riseml" backend


def digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.tensor(d.data, dtype=torch.float32) / 16.0
    y = torch.tensor(d.target, dtype=torch.int64)
    return TensorDataset(x[:1500], y[:1500]), TensorDataset(x[1500:], y[1500:])


class Digits(L.LightningModule):
    def __init__(self, lr):
        super().__init__()
        self.lr = lr
        self.net = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                       torch.nn.Linear(128, 10))

    def training_step(self, batch, _):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("loss", loss, sync_dist=True, on_epoch=True, on_step=False)
        return loss

    def validation_step(self, batch, _):
        x, y = batch
        logits = self.net(x)
        self.log("val_loss", F.cross_entropy(logits, y), sync_dist=True)
        self.log("val_acc", (logits.argmax(1) == y).float().mean(), sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--tasks-per-node", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32, help="per process")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--backend", default="riseml")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    train, test = digits()
    trainer = L.Trainer(
        accelerator="cpu", devices=args.tasks_per_node, num_nodes=args.nodes,
        strategy=DDPStrategy(process_group_backend=args.backend),
        max_epochs=args.epochs, enable_progress_bar=False, enable_checkpointing=False,
        logger=False, enable_model_summary=False)
    model = Digits(args.lr)
    trainer.fit(model, DataLoader(train, batch_size=args.batch_size, shuffle=True),
                DataLoader(test, batch_size=256))
    metrics = trainer.callback_metrics
    if trainer.global_rank == 0:
        print(json.dumps({"epochs": args.epochs, "loss": round(float(metrics["loss"]), 6),
                          "accuracy": round(float(metrics["val_acc"]), 4),
                          "backend": torch.distributed.get_backend(),
                          "world_size": trainer.world_size}), flush=True)
    # Lightning leaves the process group up; torch asks for this before exit, and torch 2.15's
    # gloo aborts at exit now and then without it ("terminate called without an active
    # exception"). riseml's backend ends cleanly either way.
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
