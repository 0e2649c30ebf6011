#!/usr/bin/env bash
# A failing run line ends the job with a failure, and the lines after it do not run.
# Arguments: the riseml binary, a scratch folder every node sees.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
riseml=${1:?usage: riseml_submit_stops_at_failure.sh RISEML SCRATCH}
dir=${2:?usage: riseml_submit_stops_at_failure.sh RISEML SCRATCH}
rm -rf "$dir" && mkdir -p "$dir"
cat >"$dir/riseml.yml" <<'YML'
project: e2e-fail
train:
  run:
    - echo first line ran
    - exit 3
    - echo third line ran
slurm: {time: '1'}
YML
printf 'bind: off\ncontainers: none\n' >"$dir/site.yml"
job=$(riseml_submit_and_wait "$riseml" "$dir/site.yml" "$dir/riseml.yml")
log=$dir/riseml-e2e-fail-$job.out
grep -q 'first line ran' "$log" || fail "the first line did not run: $(cat "$log")"
if grep -q 'third line ran' "$log"; then fail "the line after the failure ran: $(cat "$log")"; fi
state=$(job_state "$job")
[ "$state" = FAILED ] || fail "job $job ended $state, want FAILED"
ok "job $job stopped at the failing line and FAILED"
