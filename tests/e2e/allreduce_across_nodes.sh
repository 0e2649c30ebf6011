#!/usr/bin/env bash
# The allreduce core across two testbed nodes: 4 ranks under srun --mpi=pmix (shared memory
# inside each node, TCP between the namespaces), every result exact (riseml-bench's #wrong
# column), for small and large messages and for each algorithm.
# Argument: the riseml-bench binary.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
bench=${1:?usage: allreduce_across_nodes.sh RISEML_BENCH}
need_nodes 2
for algo in auto ring hd hierarchical; do
  out=$(run_bounded srun -N2 -n4 --mpi=pmix --time=1 "$bench" --algo "$algo" \
    --sizes 4K,65K,1M,9M --rounds 1 --calls 5)
  grep -q '^# riseml: transports \[.*tcp' <<<"$out" ||
    fail "$algo: no TCP between the nodes:"$'\n'"$out"
  # Three tables (back to back out of place and in place, per call) of 4 sizes each.
  rows=$(grep -E '^ +[0-9]+ +[0-9]+ +float32' <<<"$out" || true)
  [ "$(grep -c . <<<"$rows")" -eq 12 ] || fail "$algo: want 12 result rows:"$'\n'"$out"
  wrong=$(awk '{ s += $NF } END { print s }' <<<"$rows")
  [ "$wrong" = 0 ] || fail "$algo: $wrong wrong elements:"$'\n'"$out"
done
ok "4 ranks on 2 nodes, auto/ring/hd/hierarchical, every element exact"
