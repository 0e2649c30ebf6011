#!/usr/bin/env bash
# Scaling measured through the user's path: `riseml submit` of a job whose run line is
# riseml-replay (ResNet-50's backward pass through the real engine) on 4 nodes of a testbed with
# shaped links (`up 4 --link 1gbit`). The efficiency it prints must lie in the range the links
# allow: no better than the link bound (all gradients over the measured link after the forward
# pass) and no worse than most of the no-overlap figure (compute, then all of the traffic).
# Not a timing assert on absolute numbers: both bounds come from the same run's measurements.
# Arguments: the riseml binary, riseml-replay, a scratch folder every node sees.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
riseml=${1:?usage: replay_submit_shaped.sh RISEML RISEML_REPLAY SCRATCH}
replay=${2:?}
dir=${3:?}
need_nodes 4
[ -n "${LINK:-}" ] || skip "needs shaped links: contrib/slurm/testbed/up 4 --link 1gbit (this testbed is unshaped)"
rm -rf "$dir" && mkdir -p "$dir"
cat >"$dir/riseml.yml" <<YML
project: e2e-replay
train:
  horovod: {workers: 4}
  resources: {gpus: 1, cpus: 1, mem: 512}
  run:
    - $replay resnet50 --steps 3 --warmup 1
slurm: {time: '3'}
YML
printf 'bind: off\ncontainers: none\n' >"$dir/site.yml"
job=$(RISEML_E2E_WAIT_S=150 riseml_submit_and_wait "$riseml" "$dir/site.yml" "$dir/riseml.yml")
log=$dir/riseml-e2e-replay-$job.out
[ -r "$log" ] || fail "no log $log; $dir holds: $(ls "$dir")"
[ "$(job_state "$job")" = COMPLETED ] || fail "job $job ended $(job_state "$job"):"$'\n'"$(cat "$log")"
# Each line of the job's output starts with its rank (srun --label): "0: replay: ...".
line=$(grep -E '^([0-9]+: )?replay: ' "$log") || fail "no replay summary in $log:"$'\n'"$(cat "$log")"
grep -q ' ranks=4 hosts=4 ' <<<"$line" || fail "want 4 ranks on 4 hosts: $line"
grep -q ' wrong=0$' <<<"$line" || fail "the engine returned wrong gradients: $line"
value() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$line"; }
eff=$(value efficiency) bound=$(value link_bound) serial=$(value no_overlap)
awk -v e="$eff" -v b="$bound" -v s="$serial" 'BEGIN { exit !(b < 1 && e <= b * 1.05 && e >= s * 0.8) }' ||
  fail "efficiency $eff outside what the links allow [0.8 x no-overlap $serial, 1.05 x bound $bound]:"$'\n'"$(cat "$log")"
grep -E '^([0-9]+: )?links: ' "$log" || true
ok "job $job: ResNet-50 replay on 4 nodes at ${LINK}: efficiency $eff (links allow <= $bound, no overlap $serial)"
