"""Each rank runs its work in forked children, one after another, as `pytest --forked` runs
one test per child (how Horovod's own test files are often run): riseml.torch is imported by
the rank's process, every child calls hvd.init(), checks an allreduce and a broadcast, and
leaves with os._exit like pytest-forked's children (every third shuts down first). Then the
rank's own process joins. Run under riseml-launch; exit status 1 on a failure."""
import os
import sys

import torch

import riseml.torch as hvd

CHILDREN = int(sys.argv[1]) if len(sys.argv) > 1 else 6


def work(turn):
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    summed = hvd.allreduce(torch.full((5,), float(rank + turn)), op=hvd.Sum, name=f"sum.{turn}")
    expected = float(sum(range(size)) + size * turn)
    assert summed.tolist() == [expected] * 5, (turn, summed)
    sent = torch.arange(3, dtype=torch.int64) + 100 * turn
    if rank != 0:
        sent = torch.zeros(3, dtype=torch.int64)
    got = hvd.broadcast(sent, root_rank=0, name=f"bcast.{turn}")
    assert got.tolist() == [100 * turn, 100 * turn + 1, 100 * turn + 2], (turn, got)


def child(turn):
    try:
        work(turn)
        rank = hvd.rank()
        if turn % 3 == 2:
            hvd.shutdown()
        print(f"forked rank={rank} child={turn} ok", flush=True)
        os._exit(0)
    except BaseException as error:  # noqa: BLE001 - the child must not return into the loop
        print(f"forked child={turn} error: {error!r}", file=sys.stderr, flush=True)
        os._exit(1)


def main():
    for turn in range(CHILDREN):
        pid = os.fork()
        if pid == 0:
            child(turn)
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            print(f"forked parent error: child {turn} failed", file=sys.stderr, flush=True)
            return 1
    work(CHILDREN)
    print(f"forked rank={hvd.rank()} parent ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
