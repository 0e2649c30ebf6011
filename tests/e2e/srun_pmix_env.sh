#!/usr/bin/env bash
# srun --mpi=pmix sets PMIX_RANK 0..3 for the 4 tasks of a 2-node step.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
need_nodes 2
out=$(run_bounded srun -N2 -n4 --time=1 --mpi=pmix env)
ranks=$(grep '^PMIX_RANK=' <<<"$out" | sort | tr '\n' ' ' || true)
[ "$ranks" = "PMIX_RANK=0 PMIX_RANK=1 PMIX_RANK=2 PMIX_RANK=3 " ] ||
  fail "want PMIX_RANK=0..3 once each, got: '${ranks:-nothing}'"
ok "$ranks"
