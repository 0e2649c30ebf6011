#!/usr/bin/env bash
# riseml submit of a distributed TensorFlow job (master, 1 ps, 2 workers) as a heterogeneous job:
# every task gets the same TF_CONFIG cluster with its own role and index, the never-ending ps is
# stopped when the master and workers are done, and the job succeeds.
# Arguments: the riseml binary, a scratch folder every node sees.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
riseml=${1:?usage: riseml_submit_distributed.sh RISEML SCRATCH}
dir=${2:?usage: riseml_submit_distributed.sh RISEML SCRATCH}
need_nodes 3  # Slurm gives each heterogeneous component its own nodes
rm -rf "$dir" && mkdir -p "$dir"
cat >"$dir/riseml.yml" <<'YML'
project: e2e-tf
train:
  framework: tensorflow
  tensorflow:
    distributed:
      ps: 1
      worker: 2
      master: {resources: {cpus: 2, mem: 128}}
  resources: {cpus: 1, mem: 64}
  run:
    - echo "$TF_CONFIG" > "$OUTPUT_DIR/tf-${RISEML_TF_ROLE}-${SLURM_PROCID}.json"
    - if [ "$RISEML_TF_ROLE" = ps ]; then sleep 600; fi
slurm: {time: '2'}
YML
printf 'bind: off\ncontainers: none\nriseml: %s\n' "$riseml" >"$dir/site.yml"
job=$(riseml_submit_and_wait "$riseml" "$dir/site.yml" "$dir/riseml.yml")
state=$(job_state "$job")
[ "$state" = COMPLETED ] || fail "job $job ended $state, want COMPLETED:"$'\n'"$(cat "$dir"/*.out)"
out=$dir/riseml-output/e2e-tf/$job
for f in tf-master-0 tf-ps-0 tf-worker-0 tf-worker-1; do
  [ -s "$out/$f.json" ] || fail "missing $out/$f.json; $(ls "$out" 2>&1)"
done
clusters=$(for f in "$out"/tf-*.json; do sed 's/, "task".*//' "$f"; done | sort -u | wc -l)
[ "$clusters" = 1 ] || fail "tasks disagree on the cluster:"$'\n'"$(cat "$out"/tf-*.json)"
grep -q '"task": {"type": "worker", "index": 1}' "$out/tf-worker-1.json" || fail "worker 1 has the wrong task"
grep -q '"worker": \["[a-z0-9]*:[0-9]*", "[a-z0-9]*:[0-9]*"\]' "$out/tf-master-0.json" ||
  fail "want 2 worker addresses: $(cat "$out/tf-master-0.json")"
ok "job $job: $(cat "$out/tf-master-0.json")"
