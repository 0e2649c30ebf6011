"""What `pip install --no-build-isolation .` put into TARGET works on its own: riseml (numpy),
riseml.torch (Horovod's API) and the torch.distributed backend, imported from TARGET alone (run
from an empty folder with PYTHONPATH=TARGET), and the backend's collectives across 2 processes
spawned with a file:// store.

    PYTHONPATH=TARGET python pip_install_check.py TARGET
"""
import os
import sys
import tempfile

target = os.path.realpath(sys.argv[1])


def check_from_target(module):
    where = os.path.realpath(module.__file__)
    assert where.startswith(target + os.sep), "%s came from %s, not %s" % (module.__name__, where, target)


def rank_main(rank, size, init_file):
    import torch
    import torch.distributed as dist
    import riseml.torch.distributed  # noqa: F401
    dist.init_process_group("riseml", init_method="file://" + init_file, rank=rank,
                            world_size=size)
    t = torch.arange(4, dtype=torch.float32) * (rank + 1)
    dist.all_reduce(t)
    assert t.tolist() == [0.0, 3.0, 6.0, 9.0], t
    gathered = [torch.empty(2, dtype=torch.int64) for _ in range(size)]
    dist.all_gather(gathered, torch.full((2,), rank, dtype=torch.int64))
    assert [g.tolist() for g in gathered] == [[0, 0], [1, 1]], gathered
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    import numpy as np
    import torch
    import torch.multiprocessing as mp
    import _riseml
    import _riseml_c10d
    import riseml
    import riseml.torch as hvd
    import riseml.torch.distributed
    for m in (_riseml, _riseml_c10d, riseml, hvd, riseml.torch.distributed):
        check_from_target(m)
    hvd.init()
    assert hvd.size() == 1
    assert hvd.allreduce(torch.ones(3), op=hvd.Sum).tolist() == [1.0, 1.0, 1.0]
    assert np.array_equal(riseml.allreduce(np.arange(3.0), op=riseml.Sum), np.arange(3.0))
    hvd.shutdown()
    with tempfile.TemporaryDirectory() as scratch:
        mp.spawn(rank_main, args=(2, os.path.join(scratch, "init")), nprocs=2)
    print("pip install into %s: riseml, riseml.torch and the riseml backend work (torch %s)"
          % (target, torch.__version__))
