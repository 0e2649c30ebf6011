#!/usr/bin/env python3
"""A script that never calls destroy_process_group, and leaves its last collective running,
ends with status 0 on every rank.

    exit_without_destroy.py [--rounds 10] [--ranks 4]

Each round starts the ranks fresh (env://, one all_reduce, then exit). Without riseml's exit
hook a worker thread could drop a tensor's last reference while Python finalized and abort the
process ("terminate called without an active exception"), 1 process in 30 here; torch 2.15's
gloo does the same, 1 in 60.
"""
import argparse
import os
import socket
import subprocess
import sys


def worker():
    import torch
    import torch.distributed as dist
    import riseml.torch.distributed  # noqa: F401
    dist.init_process_group("riseml")
    n = dist.get_world_size()
    t = torch.ones(1000) * (dist.get_rank() + 1)
    dist.all_reduce(t)
    assert t[0].item() == n * (n + 1) / 2, t[0].item()
    # Dropped before the exit: its Python object goes while the C++ side may still hold it.
    del t
    # And one collective left running, never waited for: the exit hook lets it end (every rank
    # made it), so no worker holds its tensors when Python finalizes.
    big = torch.ones(1 << 22)
    dist.all_reduce(big, async_op=True)
    del big


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    if os.environ.get("EXIT_CHECK_WORKER") == "1":
        worker()
        return 0
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--ranks", type=int, default=4)
    a = p.parse_args()
    failures = []
    for r in range(a.rounds):
        port = free_port()
        procs = []
        for rank in range(a.ranks):
            env = dict(os.environ, EXIT_CHECK_WORKER="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       RANK=str(rank), WORLD_SIZE=str(a.ranks))
            procs.append(subprocess.Popen([sys.executable, __file__], env=env, stderr=subprocess.PIPE, text=True))
        for rank, proc in enumerate(procs):
            _, err = proc.communicate(timeout=120)
            if proc.returncode != 0 or "terminate called" in err:
                failures.append("round %d rank %d: status %d: %s" % (r, rank, proc.returncode, err.strip()[-500:]))
    print("exit_without_destroy: %d rounds x %d ranks, %d failed" % (a.rounds, a.ranks, len(failures)))
    for f in failures:
        print("  " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
