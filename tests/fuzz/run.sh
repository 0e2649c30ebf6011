#!/usr/bin/env bash
# A bounded libFuzzer run of the riseml.yml and site-file parsers:
#   tests/fuzz/run.sh BUILD_DIR SECONDS
# BUILD_DIR is configured with CC=clang CXX=clang++ -DRISEML_FUZZ=ON (the fuzz stage of
# contrib/run-tests.sh does that). Seeds come from ../shared/riseml-examples (or
# $RISEML_EXAMPLES_DIR), tests/translator/broken, tests/translator/sites and
# tests/fuzz/regressions, copied into a temporary folder: the source tree is never written.
# Exits non-zero on any crash, leak, timeout, out-of-memory or sanitizer report, and prints one
# summary line. A crashing input is kept in $RISEML_FUZZ_ARTIFACTS (default BUILD_DIR/fuzz-artifacts);
# fix the bug, then add the input to tests/fuzz/regressions/ so it is replayed by every build.
set -euo pipefail
usage="usage: tests/fuzz/run.sh BUILD_DIR SECONDS"
build=${1:?$usage}
seconds=${2:?$usage}
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ ! -d "$build" ] && [ -d "$root/$build" ]; then build=$root/$build; fi
build=$(cd "$build" && pwd)
fuzzer=$build/tests/fuzz/riseml-fuzz-parser
if [ ! -x "$fuzzer" ]; then
  echo "fuzz: FAILED: $fuzzer is not built (configure BUILD_DIR with CC=clang CXX=clang++ -DRISEML_FUZZ=ON and build it)"
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/riseml-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
artifacts=${RISEML_FUZZ_ARTIFACTS:-$build/fuzz-artifacts}
mkdir -p "$artifacts"

examples=${RISEML_EXAMPLES_DIR:-$root/../shared/riseml-examples}
seeds=0
for dir in "$examples" "$root/tests/translator/broken" "$root/tests/translator/sites" \
           "$root/tests/fuzz/regressions"; do
  if [ ! -d "$dir" ]; then
    echo "fuzz: note: no seed folder $dir" >&2
    continue
  fi
  prefix=$(basename "$dir")
  for f in "$dir"/*; do
    [ -f "$f" ] || continue
    case $f in *.expected|*.md) continue ;; esac
    cp "$f" "$work/corpus/$prefix-$(basename "$f")"
    seeds=$((seeds + 1))
  done
done

status=0
"$fuzzer" "$work/corpus" -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
  -dict="$root/tests/fuzz/riseml.dict" -artifact_prefix="$artifacts/" -print_final_stats=1 \
  >"$work/log" 2>&1 || status=$?

runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1 || true)
cov=$(grep -o 'cov: [0-9]*' "$work/log" | tail -1 | cut -d' ' -f2 || true)
corpus=$(find "$work/corpus" -type f | wc -l)
# A sanitizer report is a failure even if the process somehow exited 0.
if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|SUMMARY: (Address|Undefined|Leak)' "$work/log"; then
  [ "$status" -ne 0 ] || status=1
fi
if [ "$status" -ne 0 ]; then
  tail -n 60 "$work/log"
  crash=$(ls -t "$artifacts" 2>/dev/null | head -1)
  echo "fuzz: FAILED (exit $status) after ${runs:-?} runs in ${seconds} s; input: $artifacts/${crash:-?}; reproduce: $fuzzer $artifacts/${crash:-INPUT}"
  exit 1
fi
echo "fuzz: ok: riseml-fuzz-parser ran ${runs:-?} inputs in ${seconds} s from $seeds seeds (corpus now $corpus, coverage ${cov:-?}): no crash, leak, timeout or sanitizer report"
