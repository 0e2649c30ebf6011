#!/usr/bin/env bash
# The testbed's link shaping holds: with `up N --link RATE`, a plain TCP stream between two
# nodes (iperf3, both directions at once) runs at 85-105% of the rate (linkcheck's own check).
# Argument: the linkcheck script.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
linkcheck=${1:?usage: shaped_link.sh LINKCHECK}
need_nodes 2
[ -n "${LINK:-}" ] || skip "needs shaped links: contrib/slurm/testbed/up 4 --link 1gbit (this testbed is unshaped)"
out=$(run_bounded "$linkcheck" --seconds 3)
grep -q "shaped to $LINK" <<<"$out" || fail "linkcheck did not check the shape:"$'\n'"$out"
ok "$(tail -1 <<<"$out")"
