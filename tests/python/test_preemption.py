"""riseml.preemption under riseml-launch: the ranks agree to stop at the step where any of them
got the signal, and requeue() asks Slurm once (rank 0) or fails on every rank saying why."""
import os
import shutil
import signal
import stat
import tempfile

import check  # noqa: E402  (tests/python)

import riseml  # noqa: E402
from riseml.preemption import PreemptionGuard, restart_count  # noqa: E402


def test_no_signal_no_stop():
    guard = PreemptionGuard()
    assert not any(guard.should_stop() for _ in range(5))
    assert guard.received is None


def test_every_rank_stops_at_the_step_one_rank_was_signalled():
    guard = PreemptionGuard()
    last = riseml.size() - 1
    stopped_at = None
    for step in range(8):
        if step == 3 and riseml.rank() == last:
            os.kill(os.getpid(), signal.SIGUSR1)
        if guard.should_stop():
            stopped_at = step
            break
    assert stopped_at == 3, stopped_at
    assert guard.received == ("SIGUSR1" if riseml.rank() == last else None)


def fake_scontrol(folder, exit_status):
    """A scontrol on PATH that records its arguments and exits with `exit_status`."""
    path = os.path.join(folder, "scontrol")
    with open(path, "w") as f:
        f.write("#!/bin/sh\necho \"$@\" >> %s/calls\necho 'scontrol: error: refused' >&2\nexit %d\n"
                % (folder, exit_status))
    os.chmod(path, stat.S_IRWXU)
    return path


def requeue_outcome(guard, **kwargs):
    try:
        guard.requeue(**kwargs)
    except SystemExit as e:
        return str(e.code)
    return "returned"


def test_requeue_outside_slurm_fails_on_every_rank():
    guard = PreemptionGuard()
    saved = os.environ.pop("SLURM_JOB_ID", None)
    try:
        message = requeue_outcome(guard)
    finally:
        if saved is not None:
            os.environ["SLURM_JOB_ID"] = saved
    assert "rank 0 could not requeue" in message or "not in a Slurm job" in message, message


def requeue_with_fake(exit_status):
    folder = riseml.broadcast_object(
        tempfile.mkdtemp(prefix="riseml-requeue-") if riseml.rank() == 0 else None, 0)
    if riseml.rank() == 0:
        fake_scontrol(folder, exit_status)
    saved_path, saved_job = os.environ.get("PATH", ""), os.environ.get("SLURM_JOB_ID")
    os.environ["PATH"] = folder + os.pathsep + saved_path
    os.environ["SLURM_JOB_ID"] = "4242"
    try:
        message = requeue_outcome(PreemptionGuard(), wait_s=0.2)
    finally:
        os.environ["PATH"] = saved_path
        if saved_job is None:
            del os.environ["SLURM_JOB_ID"]
        else:
            os.environ["SLURM_JOB_ID"] = saved_job
    calls = ""
    if riseml.rank() == 0:
        calls = open(os.path.join(folder, "calls")).read()
        shutil.rmtree(folder, ignore_errors=True)
    return message, calls


def test_refused_requeue_fails_on_every_rank_naming_the_setting():
    message, calls = requeue_with_fake(1)
    assert "requeue" in message, message
    if riseml.rank() == 0:
        assert "scontrol requeue 4242 failed: scontrol: error: refused" in message, message
        assert calls == "requeue 4242\n", calls


def test_accepted_requeue_asks_slurm_once_and_waits_to_be_ended():
    message, calls = requeue_with_fake(0)
    assert "was requeued but not ended within 0 s" in message, message
    if riseml.rank() == 0:
        assert calls == "requeue 4242\n", calls


def test_restart_count():
    saved = os.environ.get("SLURM_RESTART_COUNT")
    try:
        os.environ["SLURM_RESTART_COUNT"] = "2"
        assert restart_count() == 2
        os.environ["SLURM_RESTART_COUNT"] = "x"
        assert restart_count() == 0
        del os.environ["SLURM_RESTART_COUNT"]
        assert restart_count() == 0
    finally:
        if saved is not None:
            os.environ["SLURM_RESTART_COUNT"] = saved


if __name__ == "__main__":
    check.run(globals(), riseml.init, riseml.rank)
