#!/usr/bin/env bash
# riseml-replay end to end on one host: a small workload (every shipped model would take
# seconds a step) on 2 and 3 ranks and in fp16; the engine's results are checked by the tool
# (wrong=0), the step cannot be faster than its compute, and on a quiet or busy machine it stays
# within a generous bound of it. Bad input fails with the file and line.
# Arguments: riseml-launch, riseml-replay.
set -euo pipefail
launch=${1:?usage: replay.sh RISEML_LAUNCH RISEML_REPLAY}
replay=${2:?}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 100 ms of compute, 6 gradients of 4 KiB to 4 MiB.
cat >"$dir/small.workload" <<'W'
riseml-workload 1
model small
batch 8
step_ms 100
forward_ms 25
grad 5000 head.weight 1000x1024
grad 0 head.bias 1000
grad 20000 block2.weight 256x256x3x3
grad 20000 block1.weight 128x128x3x3
grad 15000 stem.weight 64x3x7x7
grad 0 stem.bias 64
tail_us 15000
W

check() { # ranks, extra args
  local n=$1 out line eff
  shift
  out=$("$launch" -n "$n" --timeout 60 "$replay" "$dir/small.workload" --steps 5 "$@" 2>&1) ||
    fail "riseml-replay -n $n $*:"$'\n'"$out"
  line=$(grep '^replay: ' <<<"$out") || fail "no summary line:"$'\n'"$out"
  grep -q ' wrong=0$' <<<"$line" || fail "wrong results: $line"
  grep -q " ranks=$n " <<<"$line" || fail "want ranks=$n: $line"
  eff=$(sed -n 's/.* efficiency=\([0-9.]*\) .*/\1/p' <<<"$line")
  # Never faster than the compute (1.1: the sleeps overshoot by a few ms on a loaded machine,
  # in either measurement); on a loaded 2-core CI machine the step may lose a lot, but not be
  # 10x slower than its 100 ms of compute.
  awk -v e="$eff" 'BEGIN { exit !(e > 0.1 && e <= 1.1) }' || fail "efficiency $eff out of (0.1, 1.1]: $line"
  echo "ok: -n $n $* -> $line"
}
check 2
check 3
check 2 --fp16

# A broken workload: the file and line, exit 1, no rank left behind.
printf 'riseml-workload 1\nmodel m\ngrad 1 a 4x\n' >"$dir/bad.workload"
if out=$("$launch" -n 2 --timeout 30 "$replay" "$dir/bad.workload" 2>&1); then fail "accepted a bad workload"; fi
grep -q "bad.workload:3: shape '4x'" <<<"$out" || fail "want the file and line:"$'\n'"$out"
echo "ok: bad workload named with its line"
