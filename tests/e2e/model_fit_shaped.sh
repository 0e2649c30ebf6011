#!/usr/bin/env bash
# The step model calibrated and checked on shaped links (`up 4 --link 1gbit`): riseml-bench --fit
# across 4 nodes measures the link within 80-100% of the shaped rate (TCP's overhead below it,
# nothing above), and `riseml estimate --network` of that fit predicts riseml-replay's ResNet-50
# step on the same 4 nodes within 15% (the validation in docs/scaling.md saw <= 3% there; the
# margin is for a busy CI machine). Then a workload held back from the model's development
# (bert_base of generate_shape_workloads.py, issue 37: a tied 23 M-parameter embedding ready
# last): within 10%, and inside the range the estimate prints, give or take 3% (the hand-run
# grid in docs/scaling.md: within 5% and inside the range). Both sides come from this run: no
# absolute timing assert.
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

# The held-back workload.
python3 "$(dirname "$0")/../../model/workloads/generate_shape_workloads.py" "$dir" bert_base >/dev/null ||
  fail "generate_shape_workloads.py could not write bert_base"
bert_out=$(bounded 150 srun -N4 --ntasks-per-node=1 --mpi=pmix --export=ALL "$replay" "$dir/bert_base.workload" \
  --steps 3 --warmup 1)
bert=$(grep '^replay: ' <<<"$bert_out") || fail "no replay summary for bert_base:"$'\n'"$bert_out"
grep -q ' wrong=0$' <<<"$bert" || fail "the engine returned wrong gradients: $bert"
bert_measured=$(sed -n 's/.* step_ms=\([0-9.]*\).*/\1/p' <<<"$bert")
bert_est=$(bounded 30 "$riseml" estimate --network "$dir/net.yml" --workload "$dir/bert_base.workload" --nodes 4 \
  --gpus-per-node 1)
bert_predicted=$(sed -n 's/^  step \([0-9.]*\) ms,.*/\1/p' <<<"$bert_est" | head -1)
range=$(sed -n 's/^  range \([0-9.]*\) - \([0-9.]*\) ms.*/\1 \2/p' <<<"$bert_est")
[ -n "$bert_predicted" ] && [ -n "$range" ] || fail "no step or range in riseml estimate's output:"$'\n'"$bert_est"
awk -v m="$bert_measured" -v p="$bert_predicted" 'BEGIN { d = (p - m) / m; exit !(d <= 0.10 && d >= -0.10) }' ||
  fail "bert_base: model $bert_predicted ms against measured $bert_measured ms: more than 10% apart"$'\n'"$bert_est"
read -r low high <<<"$range"
awk -v m="$bert_measured" -v lo="$low" -v hi="$high" 'BEGIN { exit !(m >= 0.97 * lo && m <= 1.03 * hi) }' ||
  fail "bert_base: measured $bert_measured ms outside the printed range $low - $high ms"$'\n'"$bert_est"
ok "fit ${gbps} GB/s on ${LINK} links; 4 nodes: ResNet-50 replay $measured ms, model $predicted ms;" \
  "bert_base (held back) replay $bert_measured ms, model $bert_predicted ms, range $low - $high ms"
