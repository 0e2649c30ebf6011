"""riseml.preemption: stop at a step every rank agrees on when Slurm warns of the time limit,
checkpoint, requeue the job, and resume from the checkpoint when it runs again.

In riseml.yml, ask Slurm for the warning and allow the requeue::

    slurm: {time: '4:00:00', signal: USR1@120, requeue: true}

(no ``B:``: Slurm then signals every task of the job's steps, so each Python rank receives it
itself; with ``B:`` only the batch shell would, and nothing forwards it to the ranks.) Each run
line must be one command (``python3 train.py ...``), so that bash hands the process over to
python; a compound line leaves a bash around the rank, which SIGUSR1 would kill.

In the training loop::

    import riseml.torch as hvd
    from riseml.preemption import PreemptionGuard

    hvd.init()
    guard = PreemptionGuard()               # installs the SIGUSR1 handler
    ...
    for step in ...:
        train_one_step()
        if guard.should_stop():             # collective: every rank calls it, once per step
            if hvd.rank() == 0:
                save_checkpoint(...)        # atomically: temporary file, then rename
            guard.requeue()                 # rank 0: scontrol requeue; all ranks wait to end

The signal reaches the ranks at slightly different moments (or only some of them); one allreduce
of a flag (the maximum) makes every rank stop after the same step. The requeued job runs the
same script again with the same job id; SLURM_RESTART_COUNT tells how often it was requeued.
"""
import os
import signal
import subprocess
import sys
import time

import numpy as np

import riseml


def restart_count():
    """How often Slurm requeued this job (0 on the first run)."""
    try:
        return int(os.environ.get("SLURM_RESTART_COUNT", "0"))
    except ValueError:
        return 0


class PreemptionGuard:
    """Catches `signals` (default SIGUSR1) and turns them into a decision all ranks share."""

    def __init__(self, signals=(signal.SIGUSR1,)):
        self._received = None
        for s in signals:
            signal.signal(s, self._on_signal)

    def _on_signal(self, signum, frame):
        del frame
        self._received = signal.Signals(signum).name

    @property
    def received(self):
        """The name of the signal this rank received ("SIGUSR1"), or None."""
        return self._received

    def should_stop(self):
        """True on every rank once any rank received the signal. Collective: every rank must
        call it at the same point (once per step), like any allreduce."""
        flag = np.array([1 if self._received else 0], dtype=np.int32)
        return bool(riseml.allreduce(flag, op=riseml.Max)[0])

    def requeue(self, wait_s=300):
        """Collective. Rank 0 asks Slurm to requeue the job (scontrol requeue); Slurm then ends
        every step, and the job runs again from the start of its script. Every rank waits here
        to be ended. Raises SystemExit when the requeue was refused (e.g. the job was submitted
        with requeue: false) or outside Slurm."""
        job = os.environ.get("SLURM_JOB_ID")
        ok = 1
        message = ""
        if riseml.rank() == 0:
            if not job:
                ok, message = 0, "not in a Slurm job (no SLURM_JOB_ID): nothing to requeue"
            else:
                # Said first: Slurm may end this process before scontrol has even returned.
                print("riseml: requeuing job %s after %s; it resumes from the checkpoint"
                      % (job, self._received or "the stop request"), flush=True)
                r = subprocess.run(["scontrol", "requeue", job], capture_output=True, text=True)
                if r.returncode != 0:
                    ok = 0
                    message = ("scontrol requeue %s failed: %s; submit with slurm: {requeue: "
                               "true}" % (job, (r.stderr or r.stdout).strip()))
        agreed = riseml.allreduce(np.array([ok], dtype=np.int32), op=riseml.Min)
        if not agreed[0]:
            raise SystemExit("riseml.preemption: " + (message or "rank 0 could not requeue"))
        # Slurm ends the steps now (SIGTERM, then SIGKILL); exiting first would let the batch
        # script go on to its next line.
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            time.sleep(1)
        sys.exit("riseml.preemption: the job was requeued but not ended within %d s" % wait_s)
