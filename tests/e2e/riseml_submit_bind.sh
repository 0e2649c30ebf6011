#!/usr/bin/env bash
# riseml submit with the site's default bind (auto): the translator writes --riseml-bind=auto on
# the run step, and spank_riseml.so gives each of the 2 x 2 Horovod processes its own GPU,
# RISEML_LOCAL_RANK and Horovod's HOROVOD_RANK ... HOROVOD_CROSS_SIZE. Arguments: the riseml
# binary, a scratch folder every node sees.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
# shellcheck source-path=SCRIPTDIR source=spank_common.sh
. "$(dirname "$0")/spank_common.sh"
riseml=${1:?usage: riseml_submit_bind.sh RISEML SCRATCH}
dir=${2:?usage: riseml_submit_bind.sh RISEML SCRATCH}
need_nodes 2
need_riseml_plugin
rm -rf "$dir" && mkdir -p "$dir"
cat >"$dir/riseml.yml" <<'YML'
project: e2e-bind
train:
  horovod: {workers: 2}
  resources: {gpus: 2, cpus: 1, mem: 128}
  run:
    - echo "bound rank=${SLURM_PROCID} host=$(hostname) local=${RISEML_LOCAL_RANK:-unset} size=${RISEML_LOCAL_SIZE:-unset} node=${RISEML_NODE_ID:-unset} hvd=${HOROVOD_RANK:-unset}/${HOROVOD_SIZE:-unset}/${HOROVOD_LOCAL_RANK:-unset}/${HOROVOD_LOCAL_SIZE:-unset}/${HOROVOD_CROSS_RANK:-unset}/${HOROVOD_CROSS_SIZE:-unset} cvd=${CUDA_VISIBLE_DEVICES:-unset}"
slurm: {time: '2'}
YML
printf 'containers: none\n' >"$dir/site.yml" # bind: auto is the default
"$riseml" translate --site "$dir/site.yml" "$dir/riseml.yml" | grep -q -- '--riseml-bind=auto' ||
  fail "riseml translate wrote no --riseml-bind=auto on the run step"
job=$(riseml_submit_and_wait "$riseml" "$dir/site.yml" "$dir/riseml.yml")
log=$dir/riseml-e2e-bind-$job.out
[ -r "$log" ] || fail "no log $log; $dir holds: $(ls "$dir")"
[ "$(job_state "$job")" = COMPLETED ] || fail "job $job ended $(job_state "$job"):"$'\n'"$(cat "$log")"
lines=$(grep '^[0-9]*: bound rank=' "$log" || true)
[ "$(grep -c . <<<"$lines")" -eq 4 ] || fail "want 4 'bound' lines in $log:"$'\n'"$(cat "$log")"
# shellcheck disable=SC2013 # host names have no spaces
for host in $(sed -n 's/.* host=\([^ ]*\) .*/\1/p' <<<"$lines" | sort -u); do
  mine=$(grep " host=$host " <<<"$lines")
  [ "$(sed -n 's/.* local=\([^ ]*\) .*/\1/p' <<<"$mine" | sort | tr '\n' ' ')" = "0 1 " ] ||
    fail "$host: want RISEML_LOCAL_RANK 0 and 1:"$'\n'"$mine"
  grep -q ' size=2 ' <<<"$mine" || fail "$host: want RISEML_LOCAL_SIZE=2:"$'\n'"$mine"
  gpus=$(sed -n 's/.* cvd=\(.*\)$/\1/p' <<<"$mine")
  grep -qvxE '[0-9]+' <<<"$gpus" && fail "$host: want one GPU per process, got:"$'\n'"$mine"
  [ "$(sort -u <<<"$gpus" | wc -l)" -eq 2 ] || fail "$host: the two processes share a GPU:"$'\n'"$mine"
done
[ "$(sed -n 's/.* node=\([^ ]*\) .*/\1/p' <<<"$lines" | sort -u | tr '\n' ' ')" = "0 1 " ] ||
  fail "want RISEML_NODE_ID 0 and 1:"$'\n'"$lines"
# Horovod's six: rank/size/local rank/local size/cross rank (= the node)/cross size (2 nodes).
while read -r line; do
  want=$(sed -n 's/^[0-9]*: bound rank=\([0-9]*\) .* local=\([0-9]*\) size=2 node=\([0-9]*\) .*/\1\/4\/\2\/2\/\3\/2/p' <<<"$line")
  if [ -z "$want" ] || [[ $line != *" hvd=$want "* ]]; then
    fail "want HOROVOD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE/CROSS_RANK/CROSS_SIZE=${want:-?} in: $line"
  fi
done <<<"$lines"
ok "job $job: 2 nodes x 2 processes, each its own GPU and local rank"
