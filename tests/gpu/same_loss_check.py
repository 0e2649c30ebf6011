"""On a GPU machine: 2 and 4 ranks train contrib/examples/pytorch-digits/train.py on CUDA to
the loss curve of one process that takes the whole global batch (batch N*B, lr N*L).

    python3 tests/gpu/same_loss_check.py RISEML_LAUNCH [N ...]      (default N: 2 4)

With fewer GPUs than ranks every rank is its own fake host (RISEML_HOST_KEY per rank) and the
GPU algorithm is hierarchical: NCCL inside each "host" (one rank), the CPU ring across them,
so several ranks can share one GPU. Synthetic data (no scikit-learn needed). Exit 0 when every
curve is within TOLERANCE per step, 1 otherwise; prints the largest difference per N.
"""
import json
import os
import subprocess
import sys
import tempfile

import torch

# Absolute, per step. On the CPU the curves agree to ~3e-7 (tests/python/check_example.py
# allows 1e-4); NCCL and the CPU ring sum in other orders than one process's backward pass.
TOLERANCE = 1e-3
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "contrib", "examples", "pytorch-digits", "train.py")


def run(cmd, env=None):
    print("+", " ".join(cmd), flush=True)
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=150, env=env)
    tail = "\n".join(out.stdout.splitlines()[-15:])
    print(tail, flush=True)
    if out.returncode != 0:
        raise SystemExit("exit status %d" % out.returncode)
    return out.stdout


def losses(path):
    with open(path) as f:
        return json.load(f)["losses"]


def main():
    launcher = sys.argv[1]
    counts = [int(a) for a in sys.argv[2:]] or [2, 4]
    if not torch.cuda.is_available():
        print("skip: no CUDA device for torch")
        return 77
    py, batch, lr = sys.executable, 32, 0.05
    common = ["--data", "synthetic", "--epochs", "2"]
    worst_all = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for n in counts:
            ref, dist = os.path.join(tmp, "ref%d.json" % n), os.path.join(tmp, "dist%d.json" % n)
            run([py, SCRIPT] + common + ["--batch-size", str(batch * n), "--lr", str(lr * n),
                                         "--history-json", ref])
            env = dict(os.environ)
            fake = torch.cuda.device_count() < n
            if fake:
                env["RISEML_GPU_ALGORITHM"] = "hierarchical"
                wrapped = ["sh", "-c", 'RISEML_HOST_KEY=fake-host-$PMIX_RANK exec "$@"', "sh"]
            else:
                wrapped = []
            out = run([launcher, "-n", str(n), "--tag-output", "--"] + wrapped +
                      [py, SCRIPT] + common + ["--batch-size", str(batch), "--lr", str(lr),
                                               "--history-json", dist, "--check-initial-weights"],
                      env)
            if out.count("initial weights identical on %d ranks" % n) != n:
                raise SystemExit("not every rank confirmed identical initial weights")
            a, b = losses(ref), losses(dist)
            if len(a) != len(b):
                raise SystemExit("%d ranks: %d vs %d steps" % (n, len(a), len(b)))
            worst = max(abs(x - y) for x, y in zip(a, b))
            worst_all = max(worst_all, worst)
            print("same_loss: %d ranks%s vs 1 process with the whole batch: %d steps, last loss "
                  "%.5f vs %.5f, largest difference %.3g (tolerance %g)"
                  % (n, " (fake hosts, hierarchical)" if fake else "", len(a), b[-1], a[-1],
                     worst, TOLERANCE), flush=True)
    return 0 if worst_all <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
