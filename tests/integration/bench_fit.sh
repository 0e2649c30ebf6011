#!/usr/bin/env bash
# riseml-bench --fit on two fake hosts of two ranks each (RISEML_HOST_KEY): TCP between the
# hosts, shared memory inside. The file it writes must hold both links, the reduction and copy
# rates, and be read by `riseml estimate --network`; numbers must be sane (positive, latency
# below a millisecond), not any particular speed. A path it cannot write fails with the path.
# Arguments: riseml-launch, riseml-bench, riseml (the CLI).
set -euo pipefail
launch=${1:?usage: bench_fit.sh RISEML_LAUNCH RISEML_BENCH RISEML_CLI}
bench=${2:?}
riseml=${3:?}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# shellcheck disable=SC2016  # expanded by each rank's shell
"$launch" -n 4 --timeout 150 -- sh -c 'RISEML_HOST_KEY=fake$((PMIX_RANK / 2)) exec "$0" --fit "$1" --rounds 1' \
  "$bench" "$dir/net.yml" >"$dir/out.txt" 2>&1 || { cat "$dir/out.txt"; fail "riseml-bench --fit failed"; }
cat "$dir/out.txt"
grep -q '^# riseml-bench --fit: 2 hosts x 2 ranks' "$dir/out.txt" || fail "not 2 hosts x 2 ranks"
grep -q '^# check: ring allreduce over the 2 hosts' "$dir/out.txt" || fail "no check of the fit"
cat "$dir/net.yml"
grep -q '^  gpus_per_node: 2$' "$dir/net.yml" || fail "gpus_per_node"
for key in nodes_link intra_node; do
  line=$(grep "^  $key: {bandwidth: " "$dir/net.yml") || fail "no $key"
  us=$(sed -n 's/.*latency: \([0-9.e+-]*\)us}.*/\1/p' <<<"$line")
  awk -v us="$us" 'BEGIN { exit !(us >= 0 && us < 1000) }' || fail "$key latency $us us"
done
grep -q '^  reduce_bandwidth: [0-9.]*GB/s$' "$dir/net.yml" || fail "reduce_bandwidth"
grep -q '^  copy_bandwidth: [0-9.]*GB/s$' "$dir/net.yml" || fail "copy_bandwidth"
# The engine's own time a cycle: measured through the engine, under 100 ms.
cycle=$(sed -n 's/^  cycle_overhead: \([0-9.]*\)\(us\|ms\) .*/\1 \2/p' "$dir/net.yml")
[ -n "$cycle" ] || fail "no cycle_overhead"
awk -v c="$cycle" 'BEGIN { split(c, v, " "); us = v[1] * (v[2] == "ms" ? 1000 : 1); exit !(us >= 0 && us < 100000) }' ||
  fail "cycle_overhead $cycle"
# The spread: the fastest and slowest burst over the model that the fit printed, in range and
# in order, its percentiles between them.
spread=$(grep "^  spread: {fast: " "$dir/net.yml") || fail "no spread"
fast=$(sed -n 's/.*fast: \([0-9.]*\),.*/\1/p' <<<"$spread")
slow=$(sed -n 's/.*slow: \([0-9.]*\)}.*/\1/p' <<<"$spread")
awk -v f="$fast" -v s="$slow" 'BEGIN { exit !(f > 0.1 && f <= s && s <= 10) }' ||
  fail "spread fast $fast slow $slow"
burst_line=$(grep '^# spread: ' "$dir/out.txt") || fail "no spread line in the fit's output"
read -r lo p5 p95 hi < <(sed -n 's/.*fastest \([0-9.]*\), 5th percentile \([0-9.]*\), median [0-9.]*, 95th percentile \([0-9.]*\), slowest \([0-9.]*\),.*/\1 \2 \3 \4/p' <<<"$burst_line")
[ "$lo" = "$fast" ] && [ "$hi" = "$slow" ] || fail "spread $fast/$slow is not the printed fastest and slowest $lo/$hi"
awk -v a="$lo" -v b="$p5" -v c="$p95" -v d="$hi" 'BEGIN { exit !(a <= b && b <= c && c <= d) }' ||
  fail "bursts out of order: fastest $lo, 5th $p5, 95th $p95, slowest $hi"

"$riseml" estimate --network "$dir/net.yml" --workload resnet50 --nodes 2 >"$dir/est.txt" 2>&1 ||
  { cat "$dir/est.txt"; fail "riseml estimate does not read the fit"; }
grep -q "network ($dir/net.yml): between nodes" "$dir/est.txt" || fail "estimate did not use the file"
grep -q 'this job: 2 nodes x 2 GPUs = 4 ranks' "$dir/est.txt" || fail "estimate shape"
grep -q "^  range [0-9.]* - [0-9.]* ms .*(spread fast $fast, slow $slow; their mean " "$dir/est.txt" ||
  fail "estimate prints no range"

# An unwritable path: exit 1 naming it, and no partial file.
if "$launch" -n 2 --timeout 60 -- "$bench" --fit /proc/riseml-no/net.yml --rounds 1 >"$dir/bad.txt" 2>&1; then
  fail "--fit into /proc succeeded"
fi
grep -q 'cannot write /proc/riseml-no/net.yml' "$dir/bad.txt" || { cat "$dir/bad.txt"; fail "no message"; }
echo "bench_fit: ok"
