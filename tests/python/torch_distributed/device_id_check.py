"""init_process_group("riseml", device_id=...): torch's eager initialisation, at 3 ranks.

    riseml-launch -n 3 python3 device_id_check.py            # CPU tensors
    RISEML_TORCH_DEVICE_STANDIN=1 riseml-launch -n 3 python3 device_id_check.py

With a device_id torch calls the backend's eager_connect_single_device on every rank at init.
riseml sets up its device collectives there (on a GPU the NCCL communicator, a collective of the
whole group), so a group's first device op may be a send between two of its ranks while the
third waits for their result: without it the two would wait in the set-up for the third, which
waits for them, until the timeout. On the stand-in (RISEML_TORCH_DEVICE_STANDIN=1) the set-up
is a barrier of the CPU communicator, as the NCCL id's exchange is. Then new_group([0, 1]): with
a bound device torch asks the parent's backend of a rank outside the new group for a "no-colour
split" (perform_nocolor_split, which NCCL needs); riseml's subgroups are set up by their members
alone, so it has nothing to do, but it must exist.
"""
import datetime
import inspect
import os
import sys

import torch
import torch.distributed as dist

import riseml.torch.distributed  # noqa: F401  registers "riseml"

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("rank %d: FAIL %s" % (dist.get_rank(), what), flush=True)


def main():
    standin = os.environ.get("RISEML_TORCH_DEVICE_STANDIN") == "1"
    if "device_id" not in inspect.signature(dist.init_process_group).parameters:
        print("skipped: torch %s has no init_process_group(device_id=...)" % torch.__version__)
        sys.exit(77)  # CTest's SKIP_RETURN_CODE: every rank alike
    dist.init_process_group("riseml", device_id=torch.device("cpu", 0),
                            timeout=datetime.timedelta(seconds=30))
    rank, size = dist.get_rank(), dist.get_world_size()
    if size != 3:
        sys.exit("run with 3 ranks")
    store = dist.distributed_c10d._get_default_store()

    # The first device op: rank 0 sends to rank 1; rank 2 waits for rank 1 to have it.
    if rank == 0:
        dist.send(torch.full((4,), 7.0), dst=1)
    elif rank == 1:
        got = torch.zeros(4)
        dist.recv(got, src=0)
        check(torch.equal(got, torch.full((4,), 7.0)), "recv from rank 0: %s" % got)
        store.set("device-id-check/received", "1")
    else:
        store.wait(["device-id-check/received"], datetime.timedelta(seconds=30))

    # A subgroup rank 2 is not in: torch asks rank 2's default backend for a no-colour split.
    pair = dist.new_group([0, 1])
    if rank < 2:
        t = torch.full((3,), float(rank + 1))
        dist.all_reduce(t, group=pair)
        check(torch.equal(t, torch.full((3,), 3.0)), "all_reduce in new_group([0, 1]): %s" % t)
    t = torch.ones(2)
    dist.all_reduce(t)
    check(torch.equal(t, torch.full((2,), 3.0)), "all_reduce of the whole group: %s" % t)
    dist.destroy_process_group()
    print("rank %d: device_id check (%s) %s" % (rank, "stand-in" if standin else "cpu",
                                                "FAILED" if failures else "ok"), flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
