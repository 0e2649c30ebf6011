#!/usr/bin/env bash
# Blame inside an elastic job: riseml-elastic on 3 nodes x 2 workers, a stream of allreduces,
# and in each trial one random worker stopped with SIGSTOP (alive, silent: a hung GPU) or, with
# fault `link`, the link of a random node other than the batch node taken down. Every survivor
# must report a failure to the driver blaming the stopped rank (or ranks of the cut-off node),
# never a healthy one; the driver must take that node out, and the job must finish on the
# others. The driver's lines say it all ("rank 3 reports a failure, blaming rank(s) 4").
# Arguments: the riseml-elastic binary, the build's python folder; fault stop|link; trials
# (default 2); timeout in s (default 5).
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
usage="usage: elastic_blame.sh RISEML_ELASTIC PYTHON_BUILD_DIR stop|link [TRIALS] [TIMEOUT_S]"
driver=${1:?$usage}
python_build=${2:?$usage}
fault=${3:?$usage}
trials=${4:-2}
timeout_s=${5:-5}
need_nodes 3
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/riseml-elastic-blame.XXXXXX)
chmod 755 "$work"
link_down=""
job=""
cleanup() {
  [ -n "$link_down" ] && ip link set "$link_down" up
  [ -n "$job" ] && scancel "$job" 2>/dev/null
  rm -rf "$work"
  return 0
}
trap cleanup EXIT
nodes="${testbed_nodes[0]},${testbed_nodes[1]},${testbed_nodes[2]}"

cat >"$work/worker.py" <<'PY'
# Allreduces of 256 KiB, a commit every 10 steps, 200 steps; each worker writes its pid.
import os, sys, time
import torch
import riseml.torch as hvd
work = sys.argv[1]
hvd.init()
rank = int(os.environ["RISEML_ELASTIC_RANK_BASE"]) + int(os.environ["SLURM_PROCID"])
with open(os.path.join(work, "pid.%d" % rank), "w") as f:
    f.write(str(os.getpid()))
state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, step=0)
@hvd.elastic.run
def train(state):
    while state.step < 200:
        out = hvd.allreduce(torch.ones(65536), name="g")
        assert float(out[0]) == 1.0, out[0]
        state.step += 1
        if state.step % 10 == 0:
            state.commit()
        time.sleep(0.02)
train(state)
print("rank %d of %d done" % (hvd.rank(), hvd.size()), flush=True)
PY

driver_dir=$(dirname "$driver")
export PATH=$driver_dir:/usr/bin:$PATH
export PYTHONPATH=$python_build:$root/python${PYTHONPATH:+:$PYTHONPATH}
export RISEML_TIMEOUT_S=$timeout_s
wrong=0
workers() { local pids=("$work"/pid.*); [ -e "${pids[0]}" ] && echo "${#pids[@]}" || echo 0; }
for trial in $(seq 1 "$trials"); do
  rm -f "$work"/pid.* "$work"/out
  # A node whose link was down is back only once Slurm hears from it again.
  for _ in $(seq 1 120); do
    [ "$(sinfo -h -N -n "$nodes" -o %T | grep -cx idle)" -eq 3 ] && break
    sleep 1
  done
  job=$(sbatch --parsable --no-kill -N3 --ntasks-per-node=2 -w "$nodes" --time=5 -o "$work/out" \
    --wrap "riseml-elastic --tasks-per-node 2 --min-workers 1 --grace 20 -- python3 $work/worker.py $work") ||
    fail "sbatch failed"
  for _ in $(seq 1 900); do
    [ "$(workers)" -eq 6 ] && break
    sleep 0.1
  done
  [ "$(workers)" -eq 6 ] || fail "trial $trial: job $job did not start 6 workers in 90 s ($(squeue -h -j "$job" -o '%T %R')):"$'\n'"$(cat "$work/out" 2>&1)"
  sleep "1.$((RANDOM % 9))"
  if [ "$fault" = stop ]; then
    victim=$((RANDOM % 6))
    kill -STOP "$(cat "$work/pid.$victim")"
    culprits=" $victim "
    what="rank $victim stopped"
  else
    node=$((1 + RANDOM % 2))  # not the batch node: the driver and its store live there
    link_down="v-${testbed_nodes[$node]}"
    ip link set "$link_down" down
    culprits=" $((2 * node)) $((2 * node + 1)) "
    what="${testbed_nodes[$node]}'s link down"
  fi
  for _ in $(seq 1 120); do
    [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
    sleep 1
  done
  [ -n "$link_down" ] && ip link set "$link_down" up
  link_down=""
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] || fail "trial $trial ($what): job $job still runs after 120 s:"$'\n'"$(cat "$work/out")"
  state=$(job_state "$job")
  job_id=$job
  job=""
  # Every survivor's report, and only blame of the victims.
  problems=""
  reports=$(grep -oE 'rank [0-9]+ reports a failure(, blaming rank\(s\) [0-9, ]+| \(no rank blamed\))' "$work/out" || true)
  for r in 0 1 2 3 4 5; do
    [[ "$culprits" == *" $r "* ]] && continue
    line=$(grep -E "^rank $r reports" <<<"$reports" | head -1)
    if [ -z "$line" ]; then problems+=" rank $r reported nothing;"; continue; fi
    blamed=$(sed -n 's/.*blaming rank(s) //p' <<<"$line" | tr -d ' ' | tr ',' ' ')
    [ -n "$blamed" ] || problems+=" rank $r blamed nobody;"
    for b in $blamed; do [[ "$culprits" == *" $b "* ]] || problems+=" rank $r blamed healthy rank $b;"; done
  done
  [ "$state" = COMPLETED ] || problems+=" job ended $state;"
  grep -q "ranks\? of 4 done\|rank 0 of 4 done" "$work/out" || problems+=" no survivor finished in a world of 4;"
  if [ -n "$problems" ]; then
    wrong=$((wrong + 1))
    echo "trial $trial ($what): WRONG:$problems"
    grep "riseml-elastic:" "$work/out"
  else
    echo "trial $trial ($what): every survivor blamed$(grep -oE 'blaming rank\(s\) [0-9, ]+' <<<"$reports" | sort | uniq -c | tr -s ' ' | tr '\n' ';'), job $job_id $state"
  fi
done
[ "$wrong" -eq 0 ] || fail "$wrong of $trials trials blamed wrongly or did not finish"
ok "$trials trials ($fault): every survivor blamed the victim, none a healthy rank; the job finished on 2 nodes"
