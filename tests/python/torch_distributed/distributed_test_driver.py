"""Runs PyTorch's own distributed test suite (torch/testing/_internal/distributed/
distributed_test.py, shipped in torch's wheel and in Debian's python3-torch) against a backend, the way out-of-tree
backends run it: BACKEND=riseml (or gloo, to compare in the same run), WORLD_SIZE=2 or 3, one
spawned process per rank, file:// rendezvous in TEMP_DIR.

    BACKEND=riseml WORLD_SIZE=2 python3 distributed_test_driver.py [-k pattern ...] [-v]

The riseml backend is added to the suite's "plugin", "ddp" and "subgroup" features, as the suite
asks of an out-of-tree backend. Many tests are gated on a backend's name ("Test requires backend
to be one of {'nccl', 'gloo'}", "Only MPI supports all_to_all"); with RISEML_SUITE_AS=gloo the
suite selects and skips its tests as for gloo, and every rank then initialises riseml instead:
every test that runs for gloo runs against riseml.
"""
import atexit
import os
import shutil
import sys
import tempfile

# expecttest from PyPI when the Python has it (the test venv); else the stand-in (Debian has none).
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "stand_ins"))
os.environ.setdefault("BACKEND", "riseml")
# The backend the suite selects its tests for (decorators read BACKEND at import).
_selected_as = os.environ.get("RISEML_SUITE_AS")
_backend = os.environ["BACKEND"]
if _selected_as:
    os.environ["BACKEND"] = _selected_as
os.environ.setdefault("WORLD_SIZE", "2")
# torch's common_utils turns on XML reports (and needs the xmlrunner package, which Debian does
# not ship) whenever CI is set in the environment; the driver prints its own results.
os.environ.pop("CI", None)
if "TEMP_DIR" not in os.environ:
    os.environ["TEMP_DIR"] = tempfile.mkdtemp(prefix="riseml-dist-test-")
    # Removed when the driver ends (not a rank: they inherit the folder, and a forked one the hook).
    # The suite's stores (tempfile's files) go there too.
    _driver_pid = os.getpid()
    atexit.register(lambda d=os.environ["TEMP_DIR"]: os.getpid() == _driver_pid and shutil.rmtree(d, True))
    os.environ["TMPDIR"] = tempfile.tempdir = os.environ["TEMP_DIR"]

if _backend == "riseml":
    import riseml.torch.distributed  # noqa: F401  registers the backend (also in each rank)

from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

try:  # torch 1.13 only
    import torch.nn.parallel._replicated_tensor_ddp_utils as _replicated  # noqa: E402
except ImportError:
    _replicated = None
if _replicated is not None:
    # Each rank of the suite switches DDP to ReplicatedTensor, which imports
    # torch.distributed._shard; with Debian's torch 1.13 on Python 3.11 that import fails (a
    # dataclass field default that 3.11 refuses), so every DDP test would fail for every
    # backend. The switch stays off, for all.
    _replicated._set_ddp_with_replicated_tensor = lambda value: None

if _backend == "riseml":
    for feature in ("plugin", "ddp", "subgroup"):
        DistTestCases.backend_feature[feature].add("riseml")

from torch.testing._internal.common_utils import run_tests  # noqa: E402
import torch.testing._internal.distributed.distributed_test as _suite  # noqa: E402
from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest, TestDistBackend)

if _selected_as:
    # The suite behaves as for the selected backend, at import and at run time (its tests branch
    # on BACKEND); only the process groups it creates are riseml's.
    import torch.distributed as _dist
    _init, _new_group = _dist.init_process_group, _dist.new_group

    def _as_riseml(backend):
        return _backend if backend in (None, _selected_as) else backend

    def init_process_group(backend=None, *args, **kwargs):
        return _init(_as_riseml(backend), *args, **kwargs)

    def new_group(ranks=None, timeout=_dist.default_pg_timeout, backend=None, *args, **kwargs):
        return _new_group(ranks, timeout, _as_riseml(backend), *args, **kwargs)

    _dist.init_process_group, _dist.new_group = init_process_group, new_group


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()


if __name__ == "__main__":
    run_tests()
