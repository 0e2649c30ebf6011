#!/usr/bin/env bash
# riseml run --local: install lines once, each run line as N ranks under riseml-launch (PMIx),
# {{placeholders}} and exported parameters from the chosen combination; a failing line stops
# the run with its status.   usage: run_local_test.sh RISEML RISEML_LAUNCH
set -euo pipefail
riseml=$1
export RISEML_LAUNCH=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/riseml-run-local.XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$dir/riseml.yml" <<'YML'
project: local-try
train:
  horovod: {workers: {count: 1, processes: 3}}
  resources: {cpus: 3}
  parameters: {lr: [0.1, 0.2]}
  install: echo "installing $LR"
  run:
    - echo "lr={{lr}} LR=$LR rank=$PMIX_RANK out=$OUTPUT_DIR"
YML
out=$(cd / && timeout 60 "$riseml" run --local --index 1 "$dir/riseml.yml" 2>&1) || fail "exit $?: $out"
[ "$(grep -c '^installing 0.2$' <<<"$out")" = 1 ] || fail "install once with LR=0.2:"$'\n'"$out"
for r in 0 1 2; do
  grep -q "^\[$r\] lr=0.2 LR=0.2 rank=$r out=$dir/riseml-output/local-try/local-" <<<"$out" ||
    fail "rank $r line missing:"$'\n'"$out"
done

# -n overrides the job's count; a failing line stops the run with that status.
cat >"$dir/riseml.yml" <<'YML'
project: local-fail
train:
  run:
    - test "$PMIX_RANK" != 1 || exit 7
    - echo should not run
YML
rc=0
out=$(timeout 60 "$riseml" run --local -n 2 "$dir/riseml.yml" 2>&1) || rc=$?
[ $rc = 7 ] || fail "want exit status 7, got $rc:"$'\n'"$out"
grep -q 'rank 1' <<<"$out" || fail "the launcher should name rank 1:"$'\n'"$out"
grep -q 'should not run' <<<"$out" && fail "the line after the failure ran:"$'\n'"$out"
grep -q 'riseml: run line failed with status 7' <<<"$out" || fail "no failure message:"$'\n'"$out"

# --index out of range is a usage error.
rc=0
out=$(cd "$dir" && printf 'project: p\ntrain: {run: "true", parameters: {a: [1, 2]}}\n' >riseml.yml &&
  "$riseml" run --local --index 5 2>&1) || rc=$?
[ $rc = 2 ] || fail "want 2 for --index 5, got $rc: $out"
grep -q -- '--index must be 0..1' <<<"$out" || fail "message: $out"
echo "ok: run --local"
