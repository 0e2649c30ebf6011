#!/usr/bin/env bash
# Preemption-safe training (riseml.preemption, contrib/examples/pytorch-digits): the example on
# 2 nodes x 2 processes gets SIGUSR1 mid-training, as Slurm sends it before the time limit for
# the example's slurm: {signal: USR1@60, requeue: true} (no B:, so to every task of the steps).
# The signal is sent with `scancel --signal=USR1` (the same delivery, to the same processes):
# time limits have minute granularity and Slurm checks them every 30 s, which would make the
# test slow and its timing loose. Every rank stops after the same step, rank 0 checkpoints, the
# job requeues itself once and resumes: every epoch is done exactly once, and riseml submit
# --follow follows it through the requeue to its exit status 0.
# Arguments: the riseml binary, the build's python folder, a scratch folder.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
riseml=${1:?usage: riseml_preemption.sh RISEML PYTHON_BUILD_DIR SCRATCH}
python_build=${2:?usage: riseml_preemption.sh RISEML PYTHON_BUILD_DIR SCRATCH}
dir=${3:?usage: riseml_preemption.sh RISEML PYTHON_BUILD_DIR SCRATCH}
need_nodes 2
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$dir" && mkdir -p "$dir"
cp "$root"/contrib/examples/pytorch-digits/*.py "$root"/contrib/examples/pytorch-digits/riseml.yml "$dir/"
grep -q 'signal: USR1@60' "$dir/riseml.yml" && grep -q 'requeue: true' "$dir/riseml.yml" ||
  fail "the example's riseml.yml lacks slurm: {signal: USR1@60, requeue: true}"
# 6 epochs of 11 steps, 0.3 s each: about 20 s of training, long enough to be interrupted.
sed -i 's/--epochs 10/--epochs 6 --step-delay 0.3/; s/--check-initial-weights//' "$dir/riseml.yml"
printf 'bind: off\ncontainers: none\n' >"$dir/site.yml"
export RISEML_POLL_S=1
export PYTHONPATH=$python_build:$root/python${PYTHONPATH:+:$PYTHONPATH}

timeout 240 "$riseml" submit --follow --site "$dir/site.yml" "$dir/riseml.yml" >"$dir/follow.out" 2>"$dir/follow.err" &
follow_pid=$!
job=
for _ in $(seq 1 30); do
  job=$(head -1 "$dir/follow.out" 2>/dev/null || true)
  [[ "$job" =~ ^[0-9]+$ ]] && break
  sleep 1
done
[[ "$job" =~ ^[0-9]+$ ]] || fail "riseml submit --follow printed no job id: $(cat "$dir/follow.err")"
trap 'scancel "$job" 2>/dev/null || true' EXIT
log=$dir/riseml-pytorch-digits-$job.out
for _ in $(seq 1 90); do
  grep -q '^0: epoch 2: ' "$log" 2>/dev/null && break
  kill -0 "$follow_pid" 2>/dev/null || break  # the job ended early: fail now, with its log
  sleep 1
done
grep -q '^0: epoch 2: ' "$log" || fail "no epoch 2 within 90 s in $log:"$'\n'"$(cat "$log" 2>&1)"
scancel --signal=USR1 "$job" || fail "scancel --signal=USR1 $job failed"
# Slurm holds a requeued batch job about two minutes before it may start again (its begin
# time); the test is about the resume, not the wait: once requeued, let it start soon. Not in
# the second of the requeue: each slurmd revoked the old run's credential then, and refuses a
# credential made in the same second (seconds are its clock: "Job credential revoked", the job
# FAILED), so the start comes 2 s after the job is seen pending again.
for _ in $(seq 1 60); do
  if [ "$(job_state "$job")" = PENDING ] && scontrol show job "$job" | grep -q 'Restarts=1'; then
    sleep 2
    scontrol update JobId="$job" StartTime=now || fail "scontrol update JobId=$job StartTime=now failed"
    break
  fi
  kill -0 "$follow_pid" 2>/dev/null || break
  sleep 0.5
done

rc=0
wait "$follow_pid" || rc=$?
[ "$rc" = 0 ] || fail "riseml submit --follow exited $rc:"$'\n'"$(cat "$dir/follow.err" "$dir/follow.out")"
[ "$(job_state "$job")" = COMPLETED ] || fail "job $job ended $(job_state "$job")"
restarts=$(scontrol show job "$job" | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p')
[ "$restarts" = 1 ] || fail "want 1 requeue of job $job, scontrol shows Restarts=$restarts"
grep -q '^0: stopping after epoch [0-9] step [0-9]* (SIGUSR1): checkpoint written$' "$log" ||
  fail "rank 0 did not stop on SIGUSR1:"$'\n'"$(cat "$log")"
grep -q '^0: riseml: requeuing job '"$job"' after SIGUSR1' "$log" || fail "no requeue in $log:"$'\n'"$(cat "$log")"
grep -Eq '^0: resuming from .*checkpoint-[0-9]-step[0-9]+\.pt \(epoch [0-9], step [0-9]+\) after requeue 1$' "$log" ||
  fail "the requeued job did not resume mid-epoch:"$'\n'"$(cat "$log")"
for e in 1 2 3 4 5 6; do
  n=$(grep -c "^0: epoch $e: " "$log" || true)
  [ "$n" = 1 ] || fail "epoch $e done $n times, want once:"$'\n'"$(cat "$log")"
done
grep -q "^\[$job r0\] epoch 6: " "$dir/follow.out" || fail "submit --follow did not stream epoch 6:"$'\n'"$(cat "$dir/follow.out")"
ls "$dir"/checkpoints/checkpoint-6.pt >/dev/null 2>&1 || fail "no checkpoint-6.pt"
ok "job $job: stopped on SIGUSR1, checkpointed, requeued once, resumed; epochs 1-6 once each"
