"""Failures that reach every rank as riseml.RisemlError. Run under riseml-launch -n 3:
  stall     (RISEML_STALL_CHECK_S=0.2 RISEML_STALL_SHUTDOWN_S=0.5): rank 1 never submits a
            tensor; ranks 0 and 2 get an error naming rank 1.
  deadlock  (RISEML_DEADLOCK_S=0.5, no stall limit): ranks out of step as after a test that
            failed on one rank only: ranks 0 and 2 wait in a barrier, rank 1 in an allreduce they
            never call. Horovod hangs; here rank 1's allreduce fails with HorovodInternalError
            naming the deadlock, the barrier completes when rank 1 comes, and the ranks go on.
  shutdown  rank 1 shuts down early; the others' next collective fails saying so.
  timeline  (RISEML_TIMELINE=file): rank 0 writes a valid Chrome trace with every phase.
"""
import json
import os
import sys
import time

import numpy as np

import riseml as hvd


def main(mode):
    hvd.init()
    assert hvd.size() >= 3 or mode == "timeline", "run with riseml-launch -n 3"
    if mode == "stall":
        if hvd.rank() == 1:
            time.sleep(3.0)  # stay alive (an exit would shut every rank down)
        else:
            try:
                hvd.allreduce(np.ones(2), name="skipped.by.rank1")
                raise AssertionError("no stall error")
            except hvd.RisemlError as e:
                msg = str(e)
                assert "stall: allreduce 'skipped.by.rank1' was submitted by ranks 0, 2 but not by rank 1" in msg, msg
                print("rank %d got: %s" % (hvd.rank(), msg), flush=True)
    elif mode == "deadlock":
        started = time.monotonic()
        if hvd.rank() == 1:
            try:
                hvd.allreduce(np.ones(2), name="only.rank1")
                raise AssertionError("no deadlock error")
            except hvd.HorovodInternalError as e:
                msg = str(e)
                assert "deadlock: every rank is waiting" in msg, msg
                assert "'only.rank1' was submitted by rank 1 but not by ranks 0, 2" in msg, msg
                print("rank 1 got: %s" % msg, flush=True)
            time.sleep(0.3)  # a test runner reporting the failure before its tearDown
        hvd.barrier()
        waited = time.monotonic() - started
        assert 0.5 <= waited < 30, waited
        total = hvd.allreduce(np.ones(2), op=hvd.Sum, name="in.step")
        assert total.tolist() == [3.0, 3.0], total
    elif mode == "shutdown":
        hvd.barrier()
        if hvd.rank() == 1:
            hvd.shutdown()
            assert not hvd.is_initialized()
            try:
                hvd.allreduce(np.ones(2))
                raise AssertionError("no error after shutdown")
            except hvd.RisemlError as e:
                assert "not been initialized" in str(e), str(e)
        else:
            try:
                for _ in range(1000):
                    hvd.allreduce(np.ones(2))
                raise AssertionError("no error after rank 1 shut down")
            except hvd.RisemlError as e:
                assert "rank 1 called shutdown" in str(e), str(e)
                print("rank %d got: %s" % (hvd.rank(), e), flush=True)
    elif mode == "timeline":
        path = os.environ["RISEML_TIMELINE"]
        for step in range(3):
            handles = [hvd.allreduce_async(np.ones(10 * (k + 1), np.float32), name="w%d" % k)
                       for k in range(4)]
            for h in handles:
                hvd.synchronize(h)
        hvd.broadcast(np.ones(2), 0, name="b")
        hvd.allgather(np.ones(2), name="g")
        rank = hvd.rank()
        hvd.shutdown()  # closes the timeline
        if rank == 0:
            with open(path) as f:
                events = json.load(f)
            phases = {e["name"] for e in events if e.get("ph") == "X"}
            rows = {e["args"]["name"] for e in events if e.get("ph") == "M"}
            for p in ("NEGOTIATE", "QUEUE", "ALLREDUCE", "BROADCAST", "ALLGATHER"):
                assert p in phases, (p, phases)
            assert {"w0", "w3", "b", "g"} <= rows, rows
            print("timeline ok: %d events, phases %s" % (len(events), sorted(phases)), flush=True)
    else:
        raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    main(sys.argv[1])
