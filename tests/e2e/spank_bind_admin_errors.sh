#!/usr/bin/env bash
# Admin-side failures, with the plugin listed as `required` (as the installed snippet does): an
# unreadable topology= fails the step with a message naming the plugin, the file and the fix
# (on_error=warn runs it unbound instead); a topology that crashes hwloc's XML import (issue 11)
# is read in the helper, never in slurmstepd: the step fails at once with the riseml message, or
# runs unbound with on_error=warn or `optional`; an unknown plugstack.conf argument fails srun.
# slurmd stays up. srun and slurmstepd read plugstack.conf at every step, so the test rewrites it for
# its own steps and puts the testbed's back (also on failure).
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
# shellcheck source-path=SCRIPTDIR source=spank_common.sh
. "$(dirname "$0")/spank_common.sh"
need_riseml_plugin
so=$(grep -m1 -o '[^ ]*spank_riseml\.so' "$plugstack")
saved=$(mktemp)
cp -p "$plugstack" "$saved"
trap 'cp -p "$saved" "$plugstack"; rm -f "$saved"' EXIT
use() { printf '%s\n' "$*" >"$plugstack"; }
step() { timeout 60 srun "$@" 2>&1 || true; } # this Slurm's srun exits 0 when a launch fails

use "required $so topology=/nonexistent/riseml-node.xml"
out=$(step --riseml-bind=auto -n1 --time=1 echo ran)
grep -q '^ran$' <<<"$out" && fail "the step ran with an unreadable topology:"$'\n'"$out"
grep -q 'riseml: cannot read topology file /nonexistent/riseml-node.xml: No such file or directory; fix topology= in plugstack.conf' <<<"$out" ||
  fail "want the riseml message naming the file and the fix, got:"$'\n'"$out"
grep -q 'launch failed' <<<"$out" || fail "want the launch to fail, got:"$'\n'"$out"
out=$(step -n1 --time=1 echo ran) # without --riseml-bind the topology is never read
grep -q '^ran$' <<<"$out" || fail "a step without --riseml-bind failed:"$'\n'"$out"

use "required $so topology=/nonexistent/riseml-node.xml on_error=warn"
# shellcheck disable=SC2016 # expanded in the task
out=$(step --riseml-bind=auto -n1 --time=1 sh -c 'echo "ran rank=${RISEML_LOCAL_RANK:-unset}"')
grep -q '^ran rank=unset$' <<<"$out" || fail "on_error=warn: want the step to run unbound, got:"$'\n'"$out"
grep -q 'Continuing without --riseml-bind (on_error=warn)' <<<"$out" || fail "on_error=warn: no warning:"$'\n'"$out"

# The exact XML that segfaulted hwloc 2.9 inside slurmstepd: a PU without nodeset attributes.
crash_xml=$(cd "$(dirname "$0")/../spank_plugin/bad_topologies" && pwd)/pu-without-nodeset.xml
use "required $so topology=$crash_xml"
start=$SECONDS
out=$(step --riseml-bind=auto -n1 --time=1 echo ran)
took=$((SECONDS - start))
grep -q '^ran$' <<<"$out" && fail "the step ran with a topology that crashes hwloc:"$'\n'"$out"
grep -q "riseml: hwloc crashed reading $crash_xml (signal 11" <<<"$out" ||
  fail "want the riseml message naming the crash and the file, got:"$'\n'"$out"
grep -q 'io error with slurmstepd' <<<"$out" && fail "slurmstepd crashed:"$'\n'"$out"
[ "$took" -lt 20 ] || fail "the failing step took ${took} s (slurmstepd crashed before: 6-92 s)"
use "required $so topology=$crash_xml on_error=warn"
# shellcheck disable=SC2016 # expanded in the task
out=$(step --riseml-bind=auto -n1 --time=1 sh -c 'echo "ran rank=${RISEML_LOCAL_RANK:-unset}"')
grep -q '^ran rank=unset$' <<<"$out" || fail "crashing topology, on_error=warn: want the step to run unbound, got:"$'\n'"$out"
use "optional $so topology=$crash_xml"
out=$(step --riseml-bind=auto -n1 --time=1 echo ran)
grep -q '^ran$' <<<"$out" || fail "crashing topology, optional: want the step to run, got:"$'\n'"$out"

use "required $so colour=blue"
rc=0
out=$(timeout 60 srun -n1 --time=1 echo ran 2>&1) || rc=$?
[ $rc -ne 0 ] || fail "srun accepted an unknown plugstack.conf argument:"$'\n'"$out"
grep -q "riseml: unknown plugstack.conf argument 'colour=blue'; known: default, topology" <<<"$out" ||
  fail "want the riseml message listing the known arguments, got:"$'\n'"$out"

cp -p "$saved" "$plugstack"
out=$(run_bounded srun -N"${#testbed_nodes[@]}" --time=1 echo still-up)
[ "$(grep -c '^still-up$' <<<"$out")" -eq "${#testbed_nodes[@]}" ] || fail "the next step did not run on every node:"$'\n'"$out"
if sinfo -h -N -p debug -o '%N %T' | grep -qiE 'down|drain|fail|not_responding|\*'; then
  fail "a node is unhealthy: $(sinfo -h -N -p debug -o '%N %T' | tr '\n' ' ')"
fi
ok "unreadable or hwloc-crashing topology fails the step (or warns), unknown argument fails srun, slurmd up"
