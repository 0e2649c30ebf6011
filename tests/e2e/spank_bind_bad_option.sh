#!/usr/bin/env bash
# A bad --riseml-bind value fails srun and sbatch with a message that names the plugin and the
# choices; slurmd stays up and the next step runs.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
# shellcheck source-path=SCRIPTDIR source=spank_common.sh
. "$(dirname "$0")/spank_common.sh"
need_riseml_plugin
rc=0
out=$(timeout 60 srun --riseml-bind=bogus -n1 --time=1 echo ran 2>&1) || rc=$?
[ $rc -ne 0 ] || fail "srun --riseml-bind=bogus succeeded:"$'\n'"$out"
grep -q '^ran$' <<<"$out" && fail "the task ran despite --riseml-bind=bogus:"$'\n'"$out"
grep -q "riseml: --riseml-bind=bogus: 'bogus' is not a choice; use auto" <<<"$out" ||
  fail "want a message naming riseml, the value and the choices, got:"$'\n'"$out"
rc=0
out=$(printf '#!/bin/bash\n#SBATCH --riseml-bind=auto,none --time=1\ntrue\n' | timeout 60 sbatch 2>&1) || rc=$?
[ $rc -ne 0 ] || fail "sbatch with --riseml-bind=auto,none was accepted:"$'\n'"$out"
grep -q 'riseml: --riseml-bind=auto,none: choose one of auto, env and none' <<<"$out" ||
  fail "want the riseml message from sbatch, got:"$'\n'"$out"
# slurmd is still there: every node idle, and a plain step runs.
out=$(run_bounded srun -N"${#testbed_nodes[@]}" --time=1 echo still-up)
[ "$(grep -c '^still-up$' <<<"$out")" -eq "${#testbed_nodes[@]}" ] || fail "the next step did not run on every node:"$'\n'"$out"
# No node down or drained (other jobs may still be completing on a shared testbed).
states=$(sinfo -h -N -p debug -o '%N %T')
if grep -qiE 'down|drain|fail|not_responding|\*' <<<"$states"; then
  fail "a node is unhealthy after the bad option:"$'\n'"$states"
fi
ok "bad --riseml-bind refused with a clear message; slurmd up"
