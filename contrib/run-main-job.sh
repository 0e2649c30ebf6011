#!/usr/bin/env bash
# The README's main-job command: sets up a fresh machine, builds riseml, translates the real
# RiseML example files, then starts a one-machine Slurm cluster (three nodes in network
# namespaces, fake GPUs, our SPANK plugin), submits the PyTorch example (riseml.torch) with
# `riseml submit --follow` on 2 nodes x 2 processes (which streams its output to the end), and
# prints the loss per epoch and where the checkpoints went.
# RISEML_KEEP_TESTBED=1 leaves the cluster running afterwards.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

bash contrib/install-deps.sh
# The Python the job trains with: a venv with torch 2.x from PyPI (contrib/python-venv.sh; the
# downloads are cached in build-venv.cache), the binding built for it.
python=$(bash contrib/python-venv.sh "$root/build-venv" "$root/build-venv.cache")
cmake -S . -B build -G Ninja "-DPYTHON_EXECUTABLE=$python" >/dev/null
# What the job needs: the translator, the SPANK plugin, the Python binding (not the tests).
cmake --build build -j "$(nproc)" --target riseml spank_riseml _riseml riseml-launch >/dev/null
riseml=$root/build/translator/riseml

# The real RiseML files the repository carries (tests/data/README.md says where they came from).
examples=$root/tests/data/riseml-examples
echo "== Translating the RiseML example files in tests/data/riseml-examples"
ok=0; refused=0
for f in "$examples"/*.yml; do
  if "$riseml" translate "$f" >/dev/null 2>&1; then ok=$((ok + 1)); else refused=$((refused + 1)); fi
done
echo "   $ok translate; $refused are refused with a message (riseml validate FILE shows why)"
echo "== One of them, examples_horovod_cifar10.yml, as an sbatch script:"
"$riseml" translate "$examples/examples_horovod_cifar10.yml" 2>/dev/null | sed 's/^/   /'

echo "== Starting the local Slurm testbed"
bash contrib/slurm/testbed/up
cleanup() {
  if [ "${RISEML_KEEP_TESTBED:-0}" != 1 ]; then bash contrib/slurm/testbed/down >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

job_dir=$(mktemp -d /tmp/riseml-main-job.XXXXXX)
cp contrib/examples/pytorch-digits/*.py contrib/examples/pytorch-digits/riseml.yml "$job_dir/"
cat >"$job_dir/site.yml" <<SITE
bind: verbose      # spank_riseml.so from this build binds each task and prints its plan
containers: none
riseml: $riseml
SITE
# The job inherits this environment, as from a user who activated their venv: its python3
# (torch, numpy, scikit-learn) first on PATH, and the riseml.torch binding from the build tree.
export PATH=$(dirname "$python"):/usr/bin:$PATH
export PYTHONPATH=$root/build/python:$root/python${PYTHONPATH:+:$PYTHONPATH}

echo "== riseml submit --follow $job_dir/riseml.yml  (PyTorch, 2 nodes x 2 processes, riseml.torch)"
# --follow prints the job id, then the state changes (stderr) and every line of the output
# prefixed with the experiment and rank, and exits with the job's exit status.
rc=0
"$riseml" submit --follow --site "$job_dir/site.yml" "$job_dir/riseml.yml" \
  > >(tee "$job_dir/follow.out" | sed -u 's/^/   /') 2> >(sed -u 's/^/   /' >&2) || rc=$?
sleep 1  # let tee finish
job_id=$(head -1 "$job_dir/follow.out")
log=$job_dir/riseml-pytorch-digits-$job_id.out
state=$(scontrol show job "$job_id" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -1)
echo "== job $job_id: ${state:-unknown}"
echo "   loss per epoch:"
grep '^0: epoch ' "$log" | sed 's/^0: /     /' || true
echo "   checkpoints (rank 0, written atomically): $(ls -v "$job_dir"/checkpoints/ 2>/dev/null | tr '\n' ' ')"
echo "   in $job_dir/checkpoints; resubmit to resume: $riseml submit --site $job_dir/site.yml $job_dir/riseml.yml"
if [ "$rc" != 0 ] || [ "$state" != COMPLETED ] || ! grep -q '^0: epoch 10: ' "$log"; then
  echo "main job: FAILED (see the log above)"
  exit 1
fi
echo "main job: done"
