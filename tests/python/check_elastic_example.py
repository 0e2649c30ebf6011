"""Checks contrib/examples/elastic-digits/train.py (run by ctest with /usr/bin/python3): under
riseml-launch --elastic -n 3, 4 epochs, rank 2 kills itself after 7 batches of epoch 2 (commits
every 5 batches and at each epoch's end). The two survivors restore the commit of batch 5,
re-form the world and finish in it; rank 0's report must say so, with every sample trained once
per epoch (the sampler deals the rest of epoch 2 to the survivors without repeating the dead
rank's committed batches), a useful accuracy and a quick recovery.

    check_elastic_example.py RISEML_LAUNCH TRAIN_PY
"""
import json
import math
import os
import subprocess
import sys
import tempfile

TRAIN, BATCH, COMMIT_EVERY, FAULT_AT = 1500, 32, 5, 7
MIN_ACCURACY = 0.85  # measured 0.892 (digits), 0.940 (synthetic data, without scikit-learn)
MAX_RECOVERY_S = 30  # measured 0.04-0.07 s (kill -9: the survivors see the death at once)


def batches(samples, size):
    """Batches per rank when `size` ranks share `samples` (the sampler pads to equal shares)."""
    return math.ceil(math.ceil(samples / size) / BATCH)


def main():
    launcher, script = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        report, fault_time = os.path.join(tmp, "report.json"), os.path.join(tmp, "fault_time")
        cmd = [launcher, "--elastic", "-n", "3", "--tag-output", "--timeout", "50",
               "--stop-grace", "1", "--", sys.executable, script, "--epochs", "4",
               "--batch-size", str(BATCH), "--commit-every", str(COMMIT_EVERY),
               "--fault", "kill", "--fault-rank", "2", "--fault-at-epoch", "2",
               "--fault-at-batch", str(FAULT_AT), "--fault-time-file", fault_time,
               "--report", report]
        print("+", " ".join(cmd), flush=True)
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=80)
        print(out.stdout, flush=True)
        if out.returncode != 0:
            raise SystemExit("riseml-launch: exit status %d" % out.returncode)
        with open(report) as f:
            r = json.load(f)
    print("report:", json.dumps(r), flush=True)
    committed = COMMIT_EVERY * (FAULT_AT // COMMIT_EVERY)
    want_steps = (batches(TRAIN, 3) + committed + batches(TRAIN - committed * 3 * BATCH, 2)
                  + 2 * batches(TRAIN, 2))
    problems = []
    for key, want in [("start_size", 3), ("final_size", 2), ("epochs", 4), ("resets", [2]),
                      ("steps_redone", FAULT_AT - committed), ("steps", want_steps)]:
        if r[key] != want:
            problems.append("%s %r, want %r" % (key, r[key], want))
    if not r["accuracy"] > MIN_ACCURACY:
        problems.append("accuracy %.3f, want > %.2f" % (r["accuracy"], MIN_ACCURACY))
    if r["recovery_s"] is None or not 0 <= r["recovery_s"] < MAX_RECOVERY_S:
        problems.append("recovery %r s, want < %d s" % (r["recovery_s"], MAX_RECOVERY_S))
    if problems:
        raise SystemExit("FAIL: " + "; ".join(problems))
    print("ok: size 3 -> 2, accuracy %.3f, recovered in %.2f s, %d steps redone"
          % (r["accuracy"], r["recovery_s"], r["steps_redone"]))


if __name__ == "__main__":
    main()
