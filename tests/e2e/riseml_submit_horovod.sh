#!/usr/bin/env bash
# riseml submit of a Horovod-style job with a parameter sweep: 2 array tasks, each 2 nodes x 2
# processes under srun --mpi=pmix; install once per node; {{placeholders}} filled per task;
# srun --label starts each line of a run step with its rank.
# Arguments: the riseml binary, a scratch folder every node sees.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
riseml=${1:?usage: riseml_submit_horovod.sh RISEML SCRATCH}
dir=${2:?usage: riseml_submit_horovod.sh RISEML SCRATCH}
need_nodes 2
rm -rf "$dir" && mkdir -p "$dir"
cat >"$dir/riseml.yml" <<'YML'
project: e2e-horovod
train:
  horovod: {workers: 2}
  resources: {gpus: 2, cpus: 2, mem: 128}
  parameters:
    greeting: [hello, hi]
  install:
    - echo "install on $(hostname)"
  run:
    - echo "{{greeting}} rank=${SLURM_PROCID} size=${SLURM_NTASKS} pmix=${PMIX_RANK:-none} host=$(hostname) out=${OUTPUT_DIR}"
    - test "${GREETING}" = "{{greeting}}"
slurm: {time: '2'}
YML
printf 'bind: off\ncontainers: none\n' >"$dir/site.yml"
job=$(riseml_submit_and_wait "$riseml" "$dir/site.yml" "$dir/riseml.yml")
for task in 0 1; do
  log=$dir/riseml-e2e-horovod-${job}_$task.out
  [ -r "$log" ] || fail "no log $log; $dir holds: $(ls "$dir")"
  greeting=$([ $task = 0 ] && echo hello || echo hi)
  lines=$(grep -c "^[0-9]*: $greeting rank=" "$log" || true)
  [ "$lines" = 4 ] || fail "want 4 '$greeting' lines in $log:"$'\n'"$(cat "$log")"
  for r in 0 1 2 3; do
    grep -q "^$r: $greeting rank=$r size=4 pmix=$r " "$log" || fail "rank $r missing in $log:"$'\n'"$(cat "$log")"
  done
  hosts=$(sed -n "s/^[0-9]*: $greeting .* host=\([^ ]*\) .*/\1/p" "$log" | sort -u | wc -l)
  [ "$hosts" = 2 ] || fail "want ranks on 2 nodes in $log"
  installs=$(grep -c '^install on ' "$log" || true)
  [ "$installs" = 2 ] || fail "want install once on each of 2 nodes, got $installs in $log"
  grep -q "out=$dir/riseml-output/e2e-horovod/${job}_$task" "$log" || fail "OUTPUT_DIR not under $dir in $log"
  [ -d "$dir/riseml-output/e2e-horovod/${job}_$task" ] || fail "OUTPUT_DIR was not created"
done
ok "job $job: 2 array tasks x 4 ranks on 2 nodes, parameters filled in"
