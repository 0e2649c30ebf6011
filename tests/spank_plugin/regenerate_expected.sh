#!/usr/bin/env bash
# Rewrites tests/spank_plugin/expected/*.json with riseml-plan (JSON form, default options):
# every topology in tests/data/topologies and the testbed fixture, with 1, 2, 4 and 8 tasks (and
# one task per GPU where a node has more than 8). READ the diff before checking it in
# (expected/README.md says what to look for).
#   tests/spank_plugin/regenerate_expected.sh [build-dir]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
plan=${1:-$root/build}/spank_plugin/riseml-plan
topologies=${RISEML_TOPOLOGY_DIR:-$root/tests/data/topologies}
[ -x "$plan" ] || { echo "no $plan: build riseml-plan first (or pass the build folder)" >&2; exit 1; }
[ -d "$topologies" ] || { echo "no topology folder $topologies" >&2; exit 1; }
rm -f "$here"/expected/*.json
one() { # name, xml
  local gpus counts n
  counts="1 2 4 8"
  gpus=$("$plan" --topology "$2" --tasks 1 --format json | sed -n '/"gpus"/p' | { grep -o '"[0-9a-f]*:[0-9a-f]*:[0-9a-f.]*"' || true; } | wc -l)
  if [ "$gpus" -gt 8 ]; then counts="$counts $gpus"; fi
  for n in $counts; do
    "$plan" --topology "$2" --tasks "$n" --format json >"$here/expected/$1.tasks$n.json"
  done
}
for xml in "$topologies"/*.xml; do one "$(basename "$xml" .xml)" "$xml"; done
one testbed-fixture "$root/contrib/slurm/testbed/fake-node-topology.xml"
find "$here/expected" -name "*.json" | wc -l
