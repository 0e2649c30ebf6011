#!/usr/bin/env bash
# After `up`, sinfo shows every testbed node idle in the debug partition with its GPUs (4 by default).
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
out=$(run_bounded sinfo -h -N -p debug -o '%N %T %G')
for node in "${testbed_nodes[@]}"; do
  line=$(grep "^$node " <<<"$out" || true)
  [ -n "$line" ] || fail "node $node missing from sinfo; sinfo printed:"$'\n'"$out"
  [[ $line == "$node idle "* ]] || fail "node $node is not idle: '$line'"
  [ "${line#* * }" = "gpu:$GPUS" ] || fail "node $node does not offer gpu:$GPUS: '$line'"
done
ok "${testbed_nodes[*]} idle with gpu:$GPUS"
