#!/usr/bin/env bash
# The step model calibrated and checked on shaped links (`up 4 --link 1gbit`): riseml-bench --fit
# across 4 nodes measures the link within 80-100% of the shaped rate (TCP's overhead below it,
# nothing above), and `riseml estimate --network` of that fit predicts riseml-replay's ResNet-50
# step on the same 4 nodes within 15% (the validation in docs/scaling.md saw <= 3% there; the
# margin is for a busy CI machine). Both sides come from this run: no absolute timing assert.
# Arguments: riseml-bench, riseml (the CLI), riseml-replay, a scratch folder.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
bench=${1:?usage: model_fit_shaped.sh RISEML_BENCH RISEML RISEML_REPLAY SCRATCH}
riseml=${2:?}
replay=${3:?}
dir=${4:?}
need_nodes 4
[ -n "${LINK:-}" ] || skip "needs shaped links: contrib/slurm/testbed/up 4 --link 1gbit (this testbed is unshaped)"
rm -rf "$dir" && mkdir -p "$dir"
bounded() { # seconds, cmd...
  local s=$1 rc=0 out
  shift
  out=$(timeout "$s" "$@" 2>&1) || rc=$?
  [ $rc -eq 0 ] || fail "exit status $rc from: $*"$'\n'"$out"
  printf '%s\n' "$out"
}
rate=$(awk -v l="$LINK" 'BEGIN { v = l + 0; if (l ~ /gbit$/) v *= 1e9 / 8e9; else if (l ~ /mbit$/) v *= 1e6 / 8e9; else v = 0; print v }')
# Fitted once more when the first fit lands outside: right after the stage's earlier jobs the
# fit read 73-80% of the rate three times here, and 88-94% a minute later with the same binary
# (and with the binary of the session before), so the first read can catch the machine busy.
for attempt in 1 2; do
  fit_out=$(bounded 120 srun -N4 --ntasks-per-node=1 --mpi=pmix --export=ALL "$bench" --fit "$dir/net.yml")
  line=$(grep '^  nodes_link: ' "$dir/net.yml") || fail "no nodes_link in the fit:"$'\n'"$fit_out"
  gbps=$(sed -n 's/.*bandwidth: \([0-9.e+-]*\)GB\/s.*/\1/p' <<<"$line")
  awk -v g="$gbps" -v r="$rate" 'BEGIN { exit !(r > 0 && g >= 0.8 * r && g <= r) }' && break
  [ $attempt = 2 ] && fail "fitted bandwidth $gbps GB/s outside 80-100% of the shaped $LINK ($rate GB/s), twice: $line"
done

replay_out=$(bounded 120 srun -N4 --ntasks-per-node=1 --mpi=pmix --export=ALL "$replay" resnet50 --steps 3 --warmup 1)
summary=$(grep '^replay: ' <<<"$replay_out") || fail "no replay summary:"$'\n'"$replay_out"
grep -q ' wrong=0$' <<<"$summary" || fail "the engine returned wrong gradients: $summary"
measured=$(sed -n 's/.* step_ms=\([0-9.]*\).*/\1/p' <<<"$summary")

est=$(bounded 30 "$riseml" estimate --network "$dir/net.yml" --workload resnet50 --nodes 4)
predicted=$(sed -n 's/^  step \([0-9.]*\) ms,.*/\1/p' <<<"$est" | head -1)
[ -n "$predicted" ] || fail "no step in riseml estimate's output:"$'\n'"$est"
awk -v m="$measured" -v p="$predicted" 'BEGIN { d = (p - m) / m; exit !(d <= 0.15 && d >= -0.15) }' ||
  fail "model $predicted ms against measured $measured ms: more than 15% apart"$'\n'"$line"$'\n'"$est"
ok "fit ${gbps} GB/s on ${LINK} links; ResNet-50 on 4 nodes: replay $measured ms, model $predicted ms"
