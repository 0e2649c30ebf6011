#!/usr/bin/env bash
# Elastic training inside one allocation, as a user meets it: riseml submit of
# contrib/examples/elastic-digits (hvd.elastic, 3 nodes, min 2) runs riseml-elastic in the batch
# step; mid-training the third node's tasks are killed (fault `kill`) or its link is taken down
# (`link`). The survivors must go back to their last commit, re-form without it, finish every
# epoch on 2 nodes with a good accuracy, and the job must end COMPLETED with no requeue; the
# driver's log must say which node left. Fault `spare`: the allocation has a fourth node
# (max_workers 4); after the third node's tasks are killed, the spare's worker joins at the
# survivors' next commit and the job finishes on 3 nodes again. Prints the seconds from the fault
# to the first step after it.
# Arguments: the riseml binary, the build's python folder, riseml-elastic, a scratch folder,
# the fault (kill|link).
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
usage="usage: elastic_digits.sh RISEML PYTHON_BUILD_DIR RISEML_ELASTIC SCRATCH kill|link|spare"
riseml=${1:?$usage}
python_build=${2:?$usage}
driver=${3:?$usage}
dir=${4:?$usage}
fault=${5:?$usage}
if [ "$fault" = spare ]; then need_nodes 4; else need_nodes 3; fi
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$dir" && mkdir -p "$dir"
link_down=""
cleanup() { [ -n "$link_down" ] && ip link set "$link_down" up; return 0; }
trap cleanup EXIT
cp "$root"/contrib/examples/elastic-digits/train.py "$root"/contrib/examples/elastic-digits/riseml.yml "$dir/"
# More epochs than the example's, so the fault lands mid-training; the survivors' report.
sed -i "s|python3 train.py --epochs 10|python3 train.py --epochs 24 --report $dir/report.json --fault-time-file $dir/fault_time|" "$dir/riseml.yml"
grep -q -- "--report" "$dir/riseml.yml" || fail "the example's run line changed: $(cat "$dir/riseml.yml")"
if [ "$fault" = spare ]; then
  sed -i 's/max_workers: 3}/max_workers: 4}/' "$dir/riseml.yml"
  grep -q "max_workers: 4}" "$dir/riseml.yml" || fail "the example's elastic line changed: $(cat "$dir/riseml.yml")"
fi
printf 'bind: off\ncontainers: none\n' >"$dir/site.yml"
# The job inherits this environment: Debian's python with torch, the binding and the driver
# from the build tree, a short timeout for the silent node of a link down.
export PATH=$(dirname "$driver"):/usr/bin:$PATH
export PYTHONPATH=$python_build:$root/python${PYTHONPATH:+:$PYTHONPATH}
export RISEML_TIMEOUT_S=10

job=$(timeout 30 "$riseml" submit --site "$dir/site.yml" "$dir/riseml.yml") || fail "riseml submit failed"
[[ "$job" =~ ^[0-9]+$ ]] || fail "riseml submit printed '$job', not a job id"
log=$dir/riseml-elastic-digits-$job.out
victim=${testbed_nodes[2]}
# Wait for epoch 4, then the fault at a random moment of the next epochs.
for _ in $(seq 1 600); do
  grep -q '^0: epoch 4:' "$log" 2>/dev/null && break
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && fail "job $job ended before epoch 4:"$'\n'"$(cat "$log" 2>/dev/null)"
  sleep 0.1
done
grep -q '^0: epoch 4:' "$log" || { scancel "$job"; fail "no epoch 4 within 60 s:"$'\n'"$(cat "$log")"; }
sleep "0.$((RANDOM % 9))"
date +%s.%N >"$dir/fault_time"
if [ "$fault" != link ]; then
  # Every task of the job on the victim node (their environment names the job and the node).
  pids=""
  for p in $(pgrep -f "train.py --epochs 24"); do
    env=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) || continue
    grep -qx "SLURM_JOB_ID=$job" <<<"$env" && grep -qx "SLURMD_NODENAME=$victim" <<<"$env" && pids+=" $p"
  done
  [ -n "$pids" ] || fail "no task of job $job on $victim"
  # shellcheck disable=SC2086
  kill -KILL $pids
else
  link_down="v-$victim"
  ip link set "$link_down" down
fi
for _ in $(seq 1 240); do
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
  sleep 1
done
[ -z "$(squeue -h -j "$job" 2>/dev/null)" ] || { scancel "$job"; fail "job $job still running 240 s after the fault:"$'\n'"$(cat "$log")"; }
cleanup
link_down=""
state=$(job_state "$job")
[ "$state" = COMPLETED ] || fail "job $job ended $state:"$'\n'"$(cat "$log")"
[ -r "$dir/report.json" ] || fail "no report from rank 0:"$'\n'"$(cat "$log")"
grep -q "riseml-elastic: .* node $victim left" "$log" || fail "the driver did not say that $victim left:"$'\n'"$(cat "$log")"
grep -q "riseml-elastic: .* the world re-formed: 2 workers on 2 node(s)" "$log" ||
  fail "the driver did not log the new world:"$'\n'"$(cat "$log")"
final=2 resets="[2]"
if [ "$fault" = spare ]; then
  final=3 resets="[2, 3]"
  grep -q "riseml-elastic: .* node ${testbed_nodes[3]} joins as rank(s) 3" "$log" &&
    grep -q "riseml-elastic: .* the world re-formed: 3 workers on 3 node(s) (.*${testbed_nodes[3]}); joined: rank(s) 3" "$log" ||
    fail "the spare did not join:"$'\n'"$(cat "$log")"
fi
# riseml status shows the workers the job ended with and the node that left.
status=$(timeout 30 "$riseml" status "$job" 2>&1) || fail "riseml status $job: $status"
want_nodes="${testbed_nodes[0]}, ${testbed_nodes[1]}"
[ "$fault" = spare ] && want_nodes="$want_nodes, ${testbed_nodes[3]}"
grep -q "elastic: $final workers on $want_nodes; left: $victim" <<<"$status" ||
  fail "riseml status $job does not show the membership (want 'elastic: $final workers on $want_nodes; left: $victim'):"$'\n'"$status"
report=$(cat "$dir/report.json")
python3 - "$dir/report.json" "$final" "$resets" <<'PY' || fail "report: $report"$'\n'"$(cat "$log")"
import json, sys
r = json.load(open(sys.argv[1]))
final, resets = int(sys.argv[2]), json.loads(sys.argv[3])
problems = []
if r["start_size"] != 3 or r["final_size"] != final: problems.append("sizes %s -> %s" % (r["start_size"], r["final_size"]))
if r["resets"] != resets: problems.append("resets %s, want %s" % (r["resets"], resets))
if r["epochs"] != 24: problems.append("epochs %s" % r["epochs"])
if r["accuracy"] < 0.85: problems.append("accuracy %s" % r["accuracy"])
if r["recovery_s"] is None or r["recovery_s"] > 30: problems.append("recovery %s s" % r["recovery_s"])
if problems: sys.exit("; ".join(problems))
PY
recovery=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('%.2f s, %d steps redone, accuracy %.3f' % (r['recovery_s'], r['steps_redone'], r['accuracy']))" "$dir/report.json")
[ "$fault" = spare ] && fault="kill (a spare joined)"
ok "job $job: $fault of $victim, the survivors went on: fault to the first step after it $recovery; COMPLETED, no requeue"
