#!/usr/bin/env bash
# Slurm's pmix plugin works across the node namespaces: 4 ranks on 2 nodes Put their host name,
# Fence, and each Gets all 4 values. Argument: the pmix_fence program.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
need_nodes 2
prog=${1:?usage: pmix_fence.sh PATH_TO_pmix_fence}
[ -x "$prog" ] || fail "$prog is not built"
out=$(run_bounded srun -N2 -n4 --time=1 --mpi=pmix "$prog")
lines=$(grep '^pmix_fence ' <<<"$out" || true)
[ "$(grep -c . <<<"$lines")" -eq 4 ] || fail "want 4 ranks to report, got:"$'\n'"$out"
# Every rank must have seen the same peers, spread over both nodes.
peers=$(sed 's/.* peers=//' <<<"$lines" | sort -u)
[ "$(wc -l <<<"$peers")" -eq 1 ] || fail "ranks saw different peers:"$'\n'"$lines"
[ "$(tr ',' '\n' <<<"$peers" | sort -u | wc -l)" -eq 2 ] || fail "want peers on 2 nodes, got: $peers"
for r in 0 1 2 3; do grep -q " rank=$r size=4 " <<<"$lines" || fail "rank $r missing:"$'\n'"$lines"; done
ok "4 ranks exchanged data across nodes: peers=$peers"
