#!/usr/bin/env bash
# Measures what starting a job costs: riseml-launch against mpirun, for `-n 4 true` (start and
# teardown of 4 processes) and for the fences riseml-pmix-probe times under each. Prints the
# commands and the numbers, for docs/performance.md.
#   tools/launch_overhead.sh BUILD_DIR [RUNS]
set -euo pipefail
build=${1:?usage: launch_overhead.sh BUILD_DIR [RUNS]}
runs=${2:-30}
launch="$build/pmix_bootstrap/riseml-launch -n 4"
probe=$build/pmix_bootstrap/riseml-pmix-probe
# mpirun refuses more ranks than cores without --oversubscribe.
mpirun="mpirun --allow-run-as-root --oversubscribe -np 4"

echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"

# Median and 90th percentile of the numbers on stdin.
stats() { # label
  sort -n | awk -v label="$1" '{ v[NR] = $1 }
    END { printf "%-44s median %8.1f  p90 %8.1f  (%d samples)\n",
          label, v[int((NR + 1) / 2)], v[int(NR * 0.9 + 0.5)], NR }'
}

echo "== launch overhead in ms, $runs runs each, the two launchers alternating"
launch_ms=$(mktemp) mpirun_ms=$(mktemp) samples=$(mktemp)
trap 'rm -f "$launch_ms" "$mpirun_ms" "$samples"' EXIT
elapsed_ms() { # command...
  local start end
  start=$(date +%s%N); "$@" >/dev/null; end=$(date +%s%N)
  awk -v start="$start" -v end="$end" 'BEGIN { printf "%.1f\n", (end - start) / 1e6 }'
}
$launch true; $mpirun true  # warm the page cache
for _ in $(seq "$runs"); do
  elapsed_ms $launch true >>"$launch_ms"
  elapsed_ms $mpirun true >>"$mpirun_ms"
done
stats "$launch true" <"$launch_ms"
stats "$mpirun true" <"$mpirun_ms"
if command -v hyperfine >/dev/null; then
  echo "== the same with hyperfine (one launcher after the other)"
  hyperfine -N --warmup 3 --runs "$runs" --style basic "$launch true" "$mpirun true" 2>&1 |
    grep -E 'Benchmark|Time|Range'
fi

echo "== fence times in us reported by riseml-pmix-probe, 4 ranks, $runs jobs each"
# fence_us: the first fence, carrying each rank's key and waiting for late starters;
# sync_fence_us: a second fence once the ranks are in step.
# Under mpirun, init() itself fences once more (to share the job secret), so there the first
# fence starts with the ranks already in step; compare sync_fence_us.
for name in riseml-launch mpirun; do
  if [ "$name" = riseml-launch ]; then launcher=$launch; else launcher=$mpirun; fi
  : >"$samples"
  for _ in $(seq "$runs"); do $launcher "$probe" >>"$samples"; done
  for field in fence_us sync_fence_us; do
    grep -o " $field=[0-9]*" "$samples" | cut -d= -f2 | stats "$name $field"
  done
done
