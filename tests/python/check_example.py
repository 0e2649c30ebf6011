"""Checks contrib/examples/pytorch-digits/train.py (run by ctest with /usr/bin/python3).

  curve  N: the script under riseml-launch -n N (batch B per rank, lr L per process) follows
            the loss curve of one process taking the whole global batch (batch N*B, lr N*L)
            to within TOLERANCE per step, and every rank starts from identical weights.
  resume N: 2 epochs, then a second run to 3 epochs resumes from the rank-0 checkpoint and ends
            on the loss curve of an uninterrupted 3-epoch run.
"""
import json
import os
import subprocess
import sys
import tempfile

TOLERANCE = 1e-4  # absolute, per step (measured: ~3e-7 with 4 ranks over 33 steps)


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=150)
    print(out.stdout, flush=True)
    if out.returncode != 0:
        raise SystemExit("exit status %d" % out.returncode)
    return out.stdout


def losses(path):
    with open(path) as f:
        return json.load(f)["losses"]


def compare(a, b, what):
    if len(a) != len(b):
        raise SystemExit("%s: %d vs %d steps" % (what, len(a), len(b)))
    worst = max(abs(x - y) for x, y in zip(a, b))
    print("%s: %d steps, largest difference %.3g (tolerance %g)" % (what, len(a), worst, TOLERANCE))
    if worst > TOLERANCE:
        raise SystemExit("%s: loss curves differ by %g" % (what, worst))


def main():
    launcher, script, mode, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    py = sys.executable
    batch, lr = 32, 0.05
    with tempfile.TemporaryDirectory() as tmp:
        ref, dist = os.path.join(tmp, "ref.json"), os.path.join(tmp, "dist.json")
        if mode == "curve":
            run([py, script, "--epochs", "2", "--batch-size", str(batch * n), "--lr", str(lr * n),
                 "--history-json", ref])
            out = run([launcher, "-n", str(n), "--tag-output", "--", py, script, "--epochs", "2",
                       "--batch-size", str(batch), "--lr", str(lr), "--history-json", dist,
                       "--check-initial-weights"])
            if out.count("initial weights identical on %d ranks" % n) != n:
                raise SystemExit("not every rank confirmed identical initial weights")
            compare(losses(ref), losses(dist), "%d ranks vs 1 process with the whole batch" % n)
        elif mode == "resume":
            ckpt = os.path.join(tmp, "ckpt")
            common = ["--", py, script, "--batch-size", str(batch), "--lr", str(lr)]
            run([launcher, "-n", str(n)] + common + ["--epochs", "3", "--history-json", ref])
            run([launcher, "-n", str(n)] + common + ["--epochs", "2", "--checkpoint-dir", ckpt])
            if sorted(os.listdir(ckpt)) != ["checkpoint-1.pt", "checkpoint-2.pt"]:
                raise SystemExit("unexpected checkpoint files: %s" % os.listdir(ckpt))
            out = run([launcher, "-n", str(n)] + common + ["--epochs", "3", "--checkpoint-dir",
                                                           ckpt, "--history-json", dist])
            if "resuming from" not in out or "(epoch 2)" not in out:
                raise SystemExit("the second run did not resume from epoch 2")
            compare(losses(ref), losses(dist), "resumed run vs uninterrupted run")
        else:
            raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    main()
