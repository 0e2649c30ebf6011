#!/usr/bin/env bash
# Blame that names the rank that is really silent, as an unlucky user meets it: srun -N2 -n4
# (two tasks per node),
# the hierarchical allreduce (shared memory inside a node, TCP between), a short timeout. In each
# trial one random task is stopped with SIGSTOP (alive, links open, silent: a hung GPU), or,
# with fault `link`, the second node's link is taken down. Every survivor must fail blaming the
# stopped rank (or, for the link, a rank of the unreachable node, saying the host is
# unreachable), and never a healthy rank it was waiting on.
# Arguments: the riseml-bench binary; fault stop|link; trials (default 2); timeout in s (4).
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
bench=${1:?usage: blame_silent_rank.sh RISEML_BENCH stop|link [TRIALS] [TIMEOUT_S]}
fault=${2:?fault: stop or link}
trials=${3:-2}
timeout_s=${4:-4}
need_nodes 2
work=$(mktemp -d)
link_down=""
cleanup() {
  [ -n "$link_down" ] && ip link set "$link_down" up
  pkill -KILL -f "$work/marker" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The task's rank of a riseml-bench process (its environment says).
rank_of() { tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | sed -n 's/^SLURM_PROCID=//p'; }

first_named() { grep -oE 'rank [0-9]+ \(host [^)]*\)' <<<"$1" | head -1; }

wrong=0
for trial in $(seq 1 "$trials"); do
  out=$work/out.$trial
  # The marker in the environment finds this trial's processes (and only them) afterwards.
  RISEML_TIMEOUT_S=$timeout_s timeout $((timeout_s + 60)) \
    srun -N2 -n4 --ntasks-per-node=2 -w "${testbed_nodes[0]},${testbed_nodes[1]}" --mpi=pmix --time=2 -l --export=ALL,RISEML_TRIAL_MARKER="$work/marker" \
    "$bench" --algo hierarchical --sizes 1M --rounds 100000 --calls 50 >"$out" 2>&1 &
  srun_pid=$!
  # Wait until the four tasks run (the bench prints nothing before its rounds end), then for
  # their setup, then a random moment of the stream of allreduces.
  declare -A pid_of=()
  for _ in $(seq 1 150); do
    pid_of=()
    for p in $(pgrep -f "riseml-bench --algo hierarchical"); do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RISEML_TRIAL_MARKER=$work/marker" || continue
      r=$(rank_of "$p")
      [ -n "$r" ] && pid_of[$r]=$p
    done
    [ "${#pid_of[@]}" -eq 4 ] && break
    sleep 0.2
  done
  [ "${#pid_of[@]}" -eq 4 ] || fail "trial $trial: found ${#pid_of[@]} of 4 tasks:"$'\n'"$(cat "$out")"
  sleep "2.$((RANDOM % 9))"
  if [ "$fault" = stop ]; then
    victim=$((RANDOM % 4))
    kill -STOP "${pid_of[$victim]}"
    survivors="0 1 2 3"
    survivors=${survivors/$victim/}
    expect="rank $victim (host"
  else
    # The second node (ranks 2 and 3: two tasks per node, in order) loses its link.
    link_down="v-${testbed_nodes[1]}"
    ip link set "$link_down" down
    survivors="0 1"
    expect_a="rank 2 (host" expect_b="rank 3 (host"
  fi
  # Every survivor prints its error; then the silent ones are ended.
  deadline=$((SECONDS + timeout_s + 20))
  for r in $survivors; do
    until grep -q "^$r: riseml-bench: " "$out"; do
      [ $SECONDS -lt $deadline ] || { echo "trial $trial: rank $r printed no error"; cat "$out"; wrong=$((wrong + 1)); break; }
      sleep 0.2
    done
  done
  for p in "${pid_of[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  if [ -n "$link_down" ]; then
    ip link set "$link_down" up
    link_down=""
  fi
  wait "$srun_pid" 2>/dev/null || true
  for r in $survivors; do
    line=$(grep "^$r: riseml-bench: " "$out" | head -1)
    named=$(first_named "$line")
    if [ "$fault" = stop ]; then
      [[ "$named" == "$expect"* ]] && continue
    else
      [[ ("$named" == "$expect_a"* || "$named" == "$expect_b"*) && "$line" == *unreachable* ]] && continue
    fi
    echo "trial $trial ($fault${victim:+ of rank $victim}): rank $r blamed '${named:-nobody}': $line"
    wrong=$((wrong + 1))
  done
  echo "trial $trial ($fault${victim:+ of rank $victim}):"
  grep -E "^[0-9]+: riseml-bench: " "$out" | sed 's/^/  /'
  unset victim
  # The node's slurmd is back on the link before the next job.
  [ "$fault" = link ] && sleep 5
done
[ "$wrong" -eq 0 ] || fail "$wrong survivor(s) blamed a healthy rank or printed nothing"
ok "$trials trial(s) of $fault: every survivor blamed the silent rank"
