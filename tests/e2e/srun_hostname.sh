#!/usr/bin/env bash
# srun -N2 -n4 hostname runs 4 tasks and prints both node names (each node has its own UTS name).
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
need_nodes 2
out=$(run_bounded srun -N2 -n4 --time=1 hostname)
[ "$(wc -l <<<"$out")" -eq 4 ] || fail "want 4 lines, got:"$'\n'"$out"
hosts=$(sort -u <<<"$out" | tr '\n' ' ')
[ "$(sort -u <<<"$out" | wc -l)" -eq 2 ] || fail "want 2 distinct host names, got: $hosts"
for h in $hosts; do
  [[ " ${testbed_nodes[*]} " == *" $h "* ]] || fail "host name '$h' is not a testbed node (${testbed_nodes[*]})"
done
ok "hosts: $hosts"
