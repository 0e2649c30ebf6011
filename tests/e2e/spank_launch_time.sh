#!/usr/bin/env bash
# Measures what spank_riseml.so adds to a step's launch: `srun -n 8 true` RUNS times each
# (default 20), alternating between plugstack.conf without the plugin, with it but no
# --riseml-bind, and with it and --riseml-bind=auto. Prints per-variant median/mean/min/max in ms.
# Not a ctest test (a benchmark; docs/performance.md has the numbers). Needs the testbed up with
# the plugin (RISEML_SPANK_PLUGIN=... contrib/slurm/testbed/up); it rewrites
# /etc/slurm/plugstack.conf between runs (slurmstepd and srun read it at each step) and puts the
# original back at the end.
#   tests/e2e/spank_launch_time.sh [RUNS]
set -euo pipefail
export LC_ALL=C
runs=${1:-20}
conf=/etc/slurm/plugstack.conf
line=$(grep -m1 'spank_riseml\.so' "$conf") || { echo "no spank_riseml.so line in $conf" >&2; exit 1; }
saved=$(mktemp)
cp -p "$conf" "$saved"
trap 'cp -p "$saved" "$conf"; rm -f "$saved"' EXIT
declare -A times=()
one() { # variant
  local t0 t1 opt=()
  case $1 in
    none) printf '# no plugin\n' >"$conf" ;;
    loaded) printf '%s\n' "$line" >"$conf" ;;
    auto) printf '%s\n' "$line" >"$conf"; opt=(--riseml-bind=auto) ;;
  esac
  t0=$(date +%s%N)
  timeout 60 srun "${opt[@]}" -n 8 --time=1 true 2>/dev/null
  t1=$(date +%s%N)
  times[$1]+="$(((t1 - t0) / 1000)) "
}
one none && one auto # warm up (not counted)
times=()
for ((i = 0; i < runs; i++)); do
  for v in none loaded auto; do one "$v"; done
done
printf '%-8s %6s %10s %10s %10s %10s\n' variant runs median_ms mean_ms min_ms max_ms
for v in none loaded auto; do
  tr ' ' '\n' <<<"${times[$v]}" | grep . | sort -n | awk -v v="$v" '
    { a[NR] = $1; s += $1 }
    END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
          printf "%-8s %6d %10.1f %10.1f %10.1f %10.1f\n", v, NR, m / 1000, s / NR / 1000, a[1] / 1000, a[NR] / 1000 }'
done
# Paired differences (each round ran the three variants back to back): robust on a noisy machine.
for v in loaded auto; do
  paste -d' ' <(tr ' ' '\n' <<<"${times[$v]}" | grep .) <(tr ' ' '\n' <<<"${times[none]}" | grep .) |
    awk '{print $1 - $2}' | sort -n | awk -v v="$v" '
      { a[NR] = $1 }
      END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
            printf "%s - none: median of %d paired differences %.1f ms\n", v, NR, m / 1000 }'
done
