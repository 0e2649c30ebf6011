#!/usr/bin/env bash
# The README's main-job command: sets up a fresh machine, builds riseml, translates the real
# RiseML example files, then starts a one-machine Slurm cluster (two nodes in network
# namespaces, fake GPUs, our SPANK plugin) and submits an example job to it with `riseml submit`.
# RISEML_KEEP_TESTBED=1 leaves the cluster running afterwards.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

bash contrib/install-deps.sh
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
riseml=$root/build/translator/riseml

examples=$root/../shared/riseml-examples
if [ -d "$examples" ]; then
  echo "== Translating the RiseML example files in $examples"
  ok=0; refused=0
  for f in "$examples"/*.yml; do
    if "$riseml" translate "$f" >/dev/null 2>&1; then ok=$((ok + 1)); else refused=$((refused + 1)); fi
  done
  echo "   $ok translate; $refused are refused with a message (riseml validate FILE shows why)"
  echo "== One of them, examples_horovod_cifar10.yml, as an sbatch script:"
  "$riseml" translate "$examples/examples_horovod_cifar10.yml" 2>/dev/null | sed 's/^/   /'
fi

echo "== Starting the local Slurm testbed"
bash contrib/slurm/testbed/up
cleanup() {
  if [ "${RISEML_KEEP_TESTBED:-0}" != 1 ]; then bash contrib/slurm/testbed/down >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

job_dir=$(mktemp -d /tmp/riseml-main-job.XXXXXX)
cp contrib/examples/hello-slurm/riseml.yml "$job_dir/"
cat >"$job_dir/site.yml" <<SITE
bind: auto         # spank_riseml.so from this build is in the testbed's plugstack.conf
containers: none
riseml: $riseml
SITE
echo "== riseml submit $job_dir/riseml.yml"
job_id=$("$riseml" submit --site "$job_dir/site.yml" "$job_dir/riseml.yml")
echo "   job $job_id; waiting for it to finish"
for _ in $(seq 1 120); do
  [ -z "$(squeue -h -j "$job_id" 2>/dev/null)" ] && break
  sleep 1
done
status=0
for log in "$job_dir"/riseml-hello-slurm-"$job_id"_*.out; do
  echo "== $(basename "$log")"
  sed 's/^/   /' "$log"
  grep -q "from rank 3 of 4" "$log" || status=1
done
if [ $status -ne 0 ]; then
  echo "main job: FAILED (see the logs above)"
  exit 1
fi
echo "main job: done; outputs under $job_dir/riseml-output"
