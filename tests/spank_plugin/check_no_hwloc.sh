#!/usr/bin/env bash
# hwloc may crash on a malformed topology XML, so only riseml-topology links it; spank_riseml.so
# (inside slurmstepd) and riseml-plan read its text output. The last argument is the helper,
# which must link hwloc (so that this check can tell the difference).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: check_no_hwloc.sh BINARY... HELPER"; exit 2; }
needs_hwloc() { readelf -d "$1" | grep -q 'NEEDED.*libhwloc'; }
helper=${*: -1}
needs_hwloc "$helper" || { echo "FAIL: $helper does not link libhwloc: is this check still looking?"; exit 1; }
for bin in "${@:1:$#-1}"; do
  if needs_hwloc "$bin"; then echo "FAIL: $bin links libhwloc"; exit 1; fi
done
echo "ok: only $(basename "$helper") links libhwloc"
