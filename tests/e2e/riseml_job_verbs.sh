#!/usr/bin/env bash
# riseml status, logs, kill, monitor and submit --follow on the testbed, for a Horovod-style
# sweep (2 experiments x 2 nodes x 1 process) and a distributed TensorFlow job (heterogeneous:
# master, ps, 2 workers): status shows the experiments with their parameters and the roles,
# logs prefixes each line with experiment and rank, monitor --once measures every rank, kill
# ID.K cancels one experiment, logs -f and submit --follow end with the job's exit status, and
# bad ids, unknown jobs and jobs riseml did not submit are refused with exit status 2.
# Arguments: the riseml binary, a scratch folder every node sees.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
riseml=${1:?usage: riseml_job_verbs.sh RISEML SCRATCH}
dir=${2:?usage: riseml_job_verbs.sh RISEML SCRATCH}
need_nodes 3
rm -rf "$dir" && mkdir -p "$dir/sweep" "$dir/tf" "$dir/fail"
export RISEML_POLL_S=1
printf 'bind: off\ncontainers: none\nriseml: %s\n' "$riseml" >"$dir/site.yml"
cat >"$dir/sweep/riseml.yml" <<'YML'
project: e2e-verbs
train:
  horovod: {workers: 2}
  resources: {cpus: 1, mem: 128}
  parameters:
    greeting: [hello, hi]
  run:
    - for i in $(seq 1 12); do echo "{{greeting}} $i rank=${SLURM_PROCID}"; sleep 1; done
slurm: {time: '2'}
YML
cat >"$dir/tf/riseml.yml" <<'YML'
project: e2e-verbs-tf
train:
  framework: tensorflow
  tensorflow:
    distributed: {ps: 1, worker: 2}
  resources: {cpus: 1, mem: 64}
  run:
    - echo "role ${RISEML_TF_ROLE} index ${SLURM_PROCID}"; if [ "$RISEML_TF_ROLE" = ps ]; then sleep 600; else sleep 20; fi
slurm: {time: '2'}
YML
cleanup() { [ -n "${sweep:-}" ] && scancel "$sweep" 2>/dev/null; [ -n "${tf:-}" ] && scancel "$tf" 2>/dev/null; true; }
trap cleanup EXIT

sweep=$(timeout 30 "$riseml" submit --site "$dir/site.yml" "$dir/sweep/riseml.yml") || fail "submit of the sweep failed"
tf=$(timeout 30 "$riseml" submit --site "$dir/site.yml" "$dir/tf/riseml.yml") || fail "submit of the TF job failed"
# Both running (the TF job starts through backfill, within a few seconds).
for _ in $(seq 1 30); do
  [ "$(squeue -h -t R -j "$sweep,$tf" 2>/dev/null | wc -l)" -ge 5 ] && break
  sleep 1
done
sleep 2

status=$(run_bounded "$riseml" status --long)
echo "$status"
grep -Eq "^$sweep +e2e-verbs +RUNNING .* 2x1 +sweep of 2: 2 RUNNING" <<<"$status" || fail "no sweep row in status:"$'\n'"$status"
grep -Eq "^  $sweep\.0 .*greeting=hello" <<<"$status" || fail "no row for $sweep.0 with its parameter:"$'\n'"$status"
grep -Eq "^  $sweep\.1 .*greeting=hi" <<<"$status" || fail "no row for $sweep.1 with its parameter:"$'\n'"$status"
grep -Eq "^$tf +e2e-verbs-tf +RUNNING .*master 1x1 on rml[0-9], ps 1x1 on rml[0-9], worker 1x2 on rml[0-9]" <<<"$status" ||
  fail "no roles for the TF job in status:"$'\n'"$status"

monitor=$(run_bounded "$riseml" monitor --once)
echo "$monitor"
for e in "$sweep.0" "$sweep.1"; do
  [ "$(grep -Ec "^$e +rml[0-9] +[0-9]+ +[01] +[0-9]+% " <<<"$monitor")" = 2 ] || fail "want 2 ranks of $e in monitor:"$'\n'"$monitor"
done
grep -Eq "^$tf worker +rml[0-9] " <<<"$monitor" || fail "no worker rows of $tf in monitor:"$'\n'"$monitor"

# One experiment cancelled, the other followed to its end.
run_bounded "$riseml" kill "$sweep.1" >/dev/null
follow=$(run_bounded "$riseml" logs -f "$sweep.0")
grep -q "^\[$sweep.0 r1\] hello 12 rank=1$" <<<"$follow" || fail "logs -f $sweep.0 lacks rank 1's last line:"$'\n'"$follow"
logs=$(run_bounded "$riseml" logs "$sweep")
[ "$(grep -c "^\[$sweep.0 r[01]\] hello [0-9]* rank=[01]$" <<<"$logs")" = 24 ] || fail "want 24 prefixed lines of $sweep.0:"$'\n'"$logs"
grep -q "^\[$sweep.1 r0\] hi 1 rank=0$" <<<"$logs" || fail "no lines of $sweep.1 in logs:"$'\n'"$logs"
status=$(run_bounded "$riseml" status "$sweep")
grep -Eq "^  $sweep\.1 +CANCELLED" <<<"$status" || fail "$sweep.1 not CANCELLED after kill:"$'\n'"$status"
grep -Eq "^  $sweep\.0 +COMPLETED" <<<"$status" || fail "$sweep.0 not COMPLETED:"$'\n'"$status"

# The TF job ends by itself (the ps is stopped when master and workers are done).
tflogs=$(run_bounded "$riseml" logs -f "$tf")
grep -q "^\[$tf r1\] role worker index 1$" <<<"$tflogs" || fail "no worker 1 line in logs of $tf:"$'\n'"$tflogs"
grep -q "^\[$tf r0\] role master index 0$" <<<"$tflogs" || fail "no master line in logs of $tf:"$'\n'"$tflogs"
tf=

# submit --follow: the state changes, the output, and the job's exit status as its own.
cat >"$dir/fail/riseml.yml" <<'YML'
project: e2e-verbs-fail
train:
  run:
    - echo "about to fail"; exit 3
slurm: {time: '1'}
YML
rc=0
out=$(timeout 60 "$riseml" submit --follow --site "$dir/site.yml" "$dir/fail/riseml.yml" 2>&1) || rc=$?
[ "$rc" = 3 ] || fail "submit --follow exited $rc, want the job's 3:"$'\n'"$out"
grep -Eq "^\[[0-9]+ r0\] about to fail$" <<<"$out" || fail "submit --follow did not stream the output:"$'\n'"$out"
grep -Eq "^riseml: [0-9]+ FAILED, exit status 3$" <<<"$out" || fail "submit --follow did not report the end:"$'\n'"$out"

# Refusals: exit status 2 and one line.
expect_refused() { # what, command...
  local what=$1 rc=0 err
  shift
  err=$(timeout 30 "$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" = 2 ] || fail "$what: exit $rc, want 2: $err"
  [ "$(grep -c . <<<"$err")" = 1 ] || fail "$what: want one line, got:"$'\n'"$err"
}
expect_refused "a bad id" "$riseml" status 12x
expect_refused "no such job" "$riseml" logs 999999
expect_refused "no such experiment" "$riseml" kill "$sweep.7"
other=$(sbatch --parsable --wrap 'sleep 30' --time=1 -o /dev/null)
expect_refused "a job riseml did not submit" "$riseml" kill "$other"
scancel "$other"
sweep_id=$sweep
sweep=
ok "sweep $sweep_id and TF job: status, logs, monitor, kill, submit --follow"
