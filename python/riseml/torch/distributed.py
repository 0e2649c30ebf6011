"""riseml.torch.distributed: riseml as a torch.distributed backend, and torch.distributed's
environment from the launcher.

    import torch.distributed as dist
    import riseml.torch.distributed          # registers the backend "riseml"
    dist.init_process_group("riseml")        # under srun --mpi=pmix, mpirun or riseml-launch:
                                             # no MASTER_ADDR, no torchrun, no init_method

Under torchrun, or with MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE set, or with any init_method
(tcp://, file://) or store, the backend bootstraps through that store like any other backend.
Under a PMIx launcher with no MASTER_ADDR, rank 0 opens the store on a free port and tells the
other ranks through PMIx; the connections between ranks authenticate with the job's PMIx secret.

setup_environment() sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and
MASTER_PORT the same way, so that "nccl" and "gloo" work with env:// too, with no torchrun.
"""
import atexit as _atexit
import datetime as _datetime
import os as _os
import socket as _socket
import sys as _sys

import torch as _torch
import torch.distributed as _dist


def _check_build():
    """The backend is C++ against torch's classes: loading it into another torch than the one
    it was built against can crash the process, so that is checked first, and named."""
    try:
        import _riseml_build
    except ImportError:  # a build tree from before _riseml_build.py: nothing to compare
        return
    built, have = _riseml_build.torch_version, _torch.__version__.split("+")[0]
    if built == "":
        why = "this riseml was built without the torch.distributed backend (its Python, %s, " \
              "had no torch)" % _riseml_build.python
    elif built != have:
        why = "riseml's torch.distributed backend was built against torch %s (%s), this " \
              "Python (%s) has torch %s" % (built, _riseml_build.python, _sys.executable, have)
    else:
        return
    raise ImportError("riseml.torch.distributed: %s. Rebuild riseml for this environment: pip "
                      "install --no-build-isolation <riseml source>, or cmake "
                      "-DPYTHON_EXECUTABLE=%s" % (why, _sys.executable))


_check_build()
import _riseml_c10d  # noqa: E402
from riseml.torch import _shard_import_fix

# FSDP on Debian's torch 1.13 and Python 3.11 (see _shard_import_fix).
_shard_import_fix.apply()

# The module, not the function torch.distributed re-exports under the same name.
_rendezvous = _sys.modules["torch.distributed.rendezvous"]

BACKEND = "riseml"
_TORCH_MAJOR = int(_torch.__version__.split(".")[0])
# The device types the backend takes tensors of.
_DEVICES = ["cpu", "cuda"] if _riseml_c10d.cuda_tensors else ["cpu"]
__all__ = ["BACKEND", "setup_environment", "launched_by_pmix"]

_pmix_world = None  # this process's PMIx world, once asked for


def launched_by_pmix():
    """Whether a PMIx server (srun --mpi=pmix, mpirun, riseml-launch) started this process as
    one rank of its job. Not under torchrun, whose workers inherit one PMIx identity per task
    (RANK then differs from PMIX_RANK, or TORCHELASTIC_RUN_ID is set)."""
    env = _os.environ
    if "PMIX_NAMESPACE" not in env or "PMIX_RANK" not in env or "TORCHELASTIC_RUN_ID" in env:
        return False
    return "RANK" not in env or env["RANK"] == env["PMIX_RANK"]


def _free_port(address):
    with _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM) as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def _tasks_on_node(tasks_per_node, node_id):
    """SLURM_STEP_TASKS_PER_NODE ("2(x3),1") at node `node_id`."""
    counts = []
    for part in tasks_per_node.split(","):
        count, _, repeat = part.partition("(x")
        counts += [int(count)] * (int(repeat.rstrip(")")) if repeat else 1)
    return counts[node_id]


def _slurm_environment(env):
    """srun without PMIx: the ranks from Slurm's variables, rank 0's node as MASTER_ADDR and a
    port every task derives alike from the job and step ids (no exchange is possible)."""
    import subprocess
    nodelist = env.get("SLURM_STEP_NODELIST", env.get("SLURM_JOB_NODELIST", ""))
    first = subprocess.run(["scontrol", "show", "hostnames", nodelist], check=True,
                           capture_output=True, text=True).stdout.split()[0]
    job = int(env.get("SLURM_JOB_ID", "0"))
    step = int(env.get("SLURM_STEP_ID", "0"))
    tasks = env.get("SLURM_STEP_TASKS_PER_NODE", env.get("SLURM_TASKS_PER_NODE", "1"))
    return dict(RANK=int(env["SLURM_PROCID"]),
                WORLD_SIZE=int(env.get("SLURM_STEP_NUM_TASKS", env.get("SLURM_NTASKS"))),
                LOCAL_RANK=int(env.get("SLURM_LOCALID", "0")),
                LOCAL_WORLD_SIZE=_tasks_on_node(tasks, int(env.get("SLURM_NODEID", "0"))),
                MASTER_ADDR=first, MASTER_PORT=20000 + (job * 131 + step) % 20000)


def setup_environment(timeout=_datetime.timedelta(minutes=5)):
    """Sets torch.distributed's variables from the launcher, for env:// with any backend.

    Returns a dict of what it set. Variables already set are kept. Under PMIx (srun
    --mpi=pmix, mpirun, riseml-launch) this is collective, every rank must call it, and rank 0
    picks a free port; under srun without PMIx the values come from Slurm's variables (the port
    from the job and step ids); a lone process becomes rank 0 of 1.
    """
    global _pmix_world
    wanted = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
              "MASTER_PORT")
    values = {}
    if launched_by_pmix():
        # Also when the SPANK plugin set all six: the job's PMIx secret then authenticates the
        # riseml backend's connections.
        if _pmix_world is None:
            _pmix_world = _riseml_c10d.PmixWorld(timeout)
        world = _pmix_world
        values.update(RANK=world.rank, WORLD_SIZE=world.size, LOCAL_RANK=world.local_rank,
                      LOCAL_WORLD_SIZE=world.local_size)
        if "MASTER_ADDR" not in _os.environ or "MASTER_PORT" not in _os.environ:
            endpoint = ""
            if world.rank == 0:
                address = _riseml_c10d.PmixWorld.root_address(_os.environ.get("RISEML_IFACE", ""))
                endpoint = "%s:%d" % (address, _free_port(address))
            address, port = world.share_root(endpoint).rsplit(":", 1)
            values.update(MASTER_ADDR=address, MASTER_PORT=port)
    elif all(name in _os.environ for name in wanted):
        return {}
    elif int(_os.environ.get("SLURM_STEP_NUM_TASKS", _os.environ.get("SLURM_NTASKS", "1"))) > 1:
        values.update(_slurm_environment(_os.environ))
    else:
        values.update(RANK=0, WORLD_SIZE=1, LOCAL_RANK=0, LOCAL_WORLD_SIZE=1,
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=_free_port("127.0.0.1"))
    set_now = {}
    for name, value in values.items():
        if name not in _os.environ:
            _os.environ[name] = str(value)
            set_now[name] = str(value)
    return set_now


def _at_exit():
    # Before Python finalizes: riseml's worker threads let go of every tensor of the collectives
    # that ended (a tensor whose Python object was already collected needs the GIL to go, and a
    # thread that asks for it during finalization aborts the process). Then disconnect from the
    # launcher: a process still connected at exit is one that died to Slurm's PMIx plugin, which
    # cancels the step (status -61, lost connection) even after the training ended well.
    _riseml_c10d.wait_until_idle(60.0)
    if _pmix_world is not None:
        _pmix_world.close()


def _create_process_group(store, rank, size, timeout):
    return _riseml_c10d.create_process_group(store, rank, size, timeout, _pmix_world)


def _env_handler_with_launcher(original):
    # env:// under a PMIx launcher: the world (and the job secret) from PMIx first.
    def handler(url, **kwargs):
        if launched_by_pmix():
            setup_environment(kwargs.get("timeout", _datetime.timedelta(minutes=5)))
        return original(url, **kwargs)
    handler._riseml = True
    return handler


def _monitored_barrier_for(original):
    # torch 1.13's dist.monitored_barrier admits gloo by name; riseml groups have one too.
    def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
        c10d = _sys.modules["torch.distributed.distributed_c10d"]
        if c10d._rank_not_in_group(group) or _dist.get_backend(group).lower() != BACKEND:
            return original(group, timeout, wait_all_ranks)
        pg = c10d._get_default_group() if group is None else group
        return pg.monitored_barrier(c10d.default_pg_timeout if timeout is None else timeout,
                                    wait_all_ranks=wait_all_ranks)
    monitored_barrier.__doc__ = original.__doc__
    monitored_barrier._riseml = True
    return monitored_barrier


def _register():
    if BACKEND.upper() not in _dist.Backend._plugins:
        if _TORCH_MAJOR >= 2:
            # torch 2: a Backend per device type; "riseml" alone or per device
            # ("cpu:riseml,cuda:nccl").
            _dist.Backend.register_backend(BACKEND, _create_process_group, devices=_DEVICES)
        else:
            _dist.Backend.register_backend(BACKEND, _create_process_group)
    if not getattr(_dist.monitored_barrier, "_riseml", False):
        patched = _monitored_barrier_for(_dist.monitored_barrier)
        _dist.monitored_barrier = patched
        _sys.modules["torch.distributed.distributed_c10d"].monitored_barrier = patched
    original = _rendezvous._rendezvous_handlers["env"]
    if not getattr(original, "_riseml", False):
        _rendezvous._rendezvous_handlers["env"] = _env_handler_with_launcher(original)


_register()
_atexit.register(_at_exit)
