"""A riseml built against one torch, imported by a Python with another (here: the build's venv
torch, and Debian's /usr/bin/python3 with torch 1.13): `import riseml.torch.distributed` raises
an ImportError that names both torches and the fix, and does not crash (loading the backend into
the other torch would). riseml.torch (Horovod's API, no torch C++) still imports.

    PYTHONPATH=build/python:python python torch_mismatch_check.py OTHER_PYTHON
Exits 77 (skipped) when OTHER_PYTHON has no torch or the same torch.
"""
import subprocess
import sys

import torch

other = sys.argv[1]
probe = subprocess.run([other, "-c", "import torch; print(torch.__version__.split('+')[0])"],
                       capture_output=True, text=True)
mine = torch.__version__.split("+")[0]
if probe.returncode != 0 or probe.stdout.strip() == mine:
    print("skipped: %s has no torch or torch %s too" % (other, mine))
    sys.exit(77)
theirs = probe.stdout.strip()
run = subprocess.run([other, "-c", "import riseml.torch.distributed"], capture_output=True,
                     text=True, timeout=120)
last = (run.stderr.strip().splitlines() or [""])[-1]
print("%s: exit %d: %s" % (other, run.returncode, last))
assert run.returncode == 1, "expected an ImportError (exit 1), got exit %d" % run.returncode
assert last.startswith("ImportError: riseml.torch.distributed:"), last
assert mine in last and theirs in last and "pip install --no-build-isolation" in last, last
ok = subprocess.run([other, "-c", "import riseml.torch"], capture_output=True, text=True,
                    timeout=120)
assert ok.returncode == 0, "riseml.torch no longer imports: %s" % ok.stderr[-2000:]
print("named, not crashed: built for torch %s, imported by torch %s" % (mine, theirs))
