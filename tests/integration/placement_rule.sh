#!/usr/bin/env bash
# The waiting rule on real processes (allreduce/src/core/placement.hpp): riseml-bench prints the
# placement rank 0 saw and how it waits. Whoever binds the ranks, the answer depends only on
# where they may run: a core each (taskset per rank; mpirun --bind-to core when Open MPI is
# there) or no more ranks than CPUs unbound: spin; more ranks than the CPUs they share: no spin.
# Arguments: riseml-launch, riseml-bench, and mpirun (optional: its part is skipped without it).
set -euo pipefail
launch=${1:?usage: placement_rule.sh RISEML_LAUNCH RISEML_BENCH [MPIRUN]}
bench=${2:?usage: placement_rule.sh RISEML_LAUNCH RISEML_BENCH [MPIRUN]}
mpirun=${3:-}
cpus=$(nproc)
failures=0

placement() { # ranks, wrapper command (gets the rank as $PMIX_RANK)...
  local n=$1; shift
  "$launch" -n "$n" --timeout 60 -- bash -c "$* \"$bench\" --sizes 4K --rounds 1 --round-seconds 0.01 --calls 5" |
    sed -n 's/^# placement: //p'
}

expect() { # what, got, wanted (a substring)
  if [[ "$2" == *"$3"* ]]; then
    echo "ok: $1: $2"
  else
    echo "FAILED: $1: got '$2', wanted '$3'"
    failures=$((failures + 1))
  fi
}

# Unbound, no more ranks than CPUs: spin.
expect "2 ranks unbound on $cpus CPUs" "$(placement 2 exec)" \
  "spin 50 us (2 rank(s) share $cpus CPU(s))"
# Bound one CPU each, as mpirun, srun --cpu-bind=cores and our plugin bind: spin.
if [ "$cpus" -ge 2 ]; then
  expect "2 ranks, one CPU each (taskset)" "$(placement 2 'exec taskset -c $PMIX_RANK')" \
    "cpus [0] [1], spin 50 us (1 rank(s) share 1 CPU(s))"
fi
# Two ranks bound to one CPU: no spin.
expect "2 ranks on CPU 0 (taskset)" "$(placement 2 'exec taskset -c 0')" \
  "cpus [0] [0], spin 0 us (2 rank(s) share 1 CPU(s))"
# More ranks than CPUs, unbound: no spin.
n=$((cpus + 2))
expect "$n ranks unbound on $cpus CPUs" "$(placement "$n" exec)" \
  "spin 0 us ($n rank(s) share $cpus CPU(s))"
# An explicit RISEML_SPIN_US wins.
expect "RISEML_SPIN_US=7" "$(placement 2 'RISEML_SPIN_US=7 exec taskset -c 0')" "spin 7 us (RISEML_SPIN_US)"
# mpirun binds to cores by default for 2 ranks: the same answer as taskset.
if [ -n "$mpirun" ] && [ "$cpus" -ge 2 ]; then
  got=$("$mpirun" --allow-run-as-root --bind-to core -np 2 "$bench" --sizes 4K --rounds 1 \
    --round-seconds 0.01 --calls 5 2>&1 | sed -n 's/^# placement: //p' || true)
  expect "2 ranks under mpirun --bind-to core" "$got" "spin 50 us (1 rank(s) share 1 CPU(s))"
fi
[ "$failures" -eq 0 ]
