"""The DDP example (contrib/examples/torch-ddp-digits/train.py) under riseml-launch -n N: the
riseml backend ends at gloo's loss and accuracy (same seed), with and without ZeRO, and learns
(accuracy >= 0.85).

    check_ddp_example.py RISEML_LAUNCH TRAIN_PY N
"""
import json
import subprocess
import sys

launch, train, n = sys.argv[1], sys.argv[2], sys.argv[3]


def final(backend, extra):
    cmd = [launch, "-n", n, "--timeout", "200", "--", sys.executable, train, "--backend",
           backend, "--epochs", "4"] + extra
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=260)
    lines = [l for l in out.stdout.splitlines() if l.startswith('{"epochs"')]
    if out.returncode != 0 or not lines:
        sys.exit("%s failed (%d):\n%s\n%s" % (" ".join(cmd), out.returncode, out.stdout[-3000:],
                                             out.stderr[-3000:]))
    return json.loads(lines[-1])


for extra in ([], ["--zero"]):
    r, g = final("riseml", extra), final("gloo", extra)
    print("riseml %s\ngloo   %s" % (r, g))
    assert r["world_size"] == int(n) and g["world_size"] == int(n)
    assert abs(r["loss"] - g["loss"]) < 1e-5, "losses differ %s" % extra
    assert r["accuracy"] == g["accuracy"], "accuracies differ %s" % extra
    assert r["accuracy"] >= 0.85, "did not learn"
print("ok")
