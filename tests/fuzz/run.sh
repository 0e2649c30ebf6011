#!/usr/bin/env bash
# A bounded libFuzzer run of one fuzz target:
#   tests/fuzz/run.sh BUILD_DIR SECONDS [parser|topology]
# parser (the default): riseml-fuzz-parser, the riseml.yml and site-file parsers. Seeds come from
#   tests/data/riseml-examples (or $RISEML_EXAMPLES_DIR), tests/translator/broken,
#   tests/translator/sites and tests/fuzz/regressions.
# topology: riseml-fuzz-topology, topology loading through riseml-topology and planning. Seeds:
#   tests/spank_plugin/bad_topologies, the testbed's fixture node, the small files of
#   tests/data/topologies (or $RISEML_TOPOLOGY_DIR), tests/fuzz/topology_regressions, and
#   riseml-topology's output for each good XML.
# BUILD_DIR is configured with CC=clang CXX=clang++ -DRISEML_FUZZ=ON (the fuzz stage of
# contrib/run-tests.sh does that). Seeds are copied into a temporary folder: the source tree is
# never written. Exits non-zero on any crash, leak, timeout, out-of-memory or sanitizer report,
# and prints one summary line. A crashing input is kept in $RISEML_FUZZ_ARTIFACTS (default
# BUILD_DIR/fuzz-artifacts); fix the bug, then add the input to the target's regression folder
# so it is replayed by every build.
set -euo pipefail
usage="usage: tests/fuzz/run.sh BUILD_DIR SECONDS [parser|topology]"
build=${1:?$usage}
seconds=${2:?$usage}
target=${3:-parser}
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ ! -d "$build" ] && [ -d "$root/$build" ]; then build=$root/$build; fi
build=$(cd "$build" && pwd)
case $target in
  parser)
    fuzzer=$build/tests/fuzz/riseml-fuzz-parser
    examples=${RISEML_EXAMPLES_DIR:-$root/tests/data/riseml-examples}
    seed_dirs=("$examples" "$root/tests/translator/broken" "$root/tests/translator/sites" "$root/tests/fuzz/regressions")
    # -timeout: one input; the parser has no reason to take long.
    options=(-max_len=4096 -timeout=10 -dict="$root/tests/fuzz/riseml.dict")
    ;;
  topology)
    fuzzer=$build/tests/fuzz/riseml-fuzz-topology
    helper=$build/spank_plugin/riseml-topology
    topologies=${RISEML_TOPOLOGY_DIR:-$root/tests/data/topologies}
    seed_dirs=("$root/tests/spank_plugin/bad_topologies" "$root/contrib/slurm/testbed/fake-node-topology.xml"
      "$topologies" "$root/tests/fuzz/topology_regressions")
    # An XML input runs riseml-topology, which the target gives 5 s before killing it.
    options=(-max_len=32768 -timeout=30 -dict="$root/tests/fuzz/topology.dict")
    ;;
  *)
    echo "$usage" >&2
    exit 2
    ;;
esac
if [ ! -x "$fuzzer" ]; then
  echo "fuzz: FAILED: $fuzzer is not built (configure BUILD_DIR with CC=clang CXX=clang++ -DRISEML_FUZZ=ON and build it)"
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/riseml-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
artifacts=${RISEML_FUZZ_ARTIFACTS:-$build/fuzz-artifacts}
mkdir -p "$artifacts"

seeds=0
add_seed() { # file, name
  cp "$1" "$work/corpus/$2"
  seeds=$((seeds + 1))
  # The topology target also reads helper output: give it that of every XML that loads.
  if [ "$target" = topology ] && [ -x "$helper" ] && [ "$(stat -c %s "$1")" -le 32768 ] &&
    "$helper" "$1" >"$work/helper-output" 2>/dev/null; then
    cp "$work/helper-output" "$work/corpus/$2.txt"
    seeds=$((seeds + 1))
  fi
}
for dir in "${seed_dirs[@]}"; do
  if [ -f "$dir" ]; then
    add_seed "$dir" "$(basename "$dir")"
    continue
  fi
  if [ ! -d "$dir" ]; then
    echo "fuzz: note: no seed folder $dir" >&2
    continue
  fi
  prefix=$(basename "$dir")
  for f in "$dir"/*; do
    [ -f "$f" ] || continue
    case $f in *.expected|*.md) continue ;; esac
    # Larger seeds would only be cut to -max_len.
    [ "$target" = topology ] && [ "$(stat -c %s "$f")" -gt 32768 ] && continue
    add_seed "$f" "$prefix-$(basename "$f")"
  done
done

status=0
"$fuzzer" "$work/corpus" -max_total_time="$seconds" "${options[@]}" -rss_limit_mb=2048 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 >"$work/log" 2>&1 || status=$?

runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1 || true)
cov=$(grep -o 'cov: [0-9]*' "$work/log" | tail -1 | cut -d' ' -f2 || true)
corpus=$(find "$work/corpus" -type f | wc -l)
# A sanitizer report is a failure even if the process somehow exited 0.
if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|SUMMARY: (Address|Undefined|Leak)|contract broken' "$work/log"; then
  [ "$status" -ne 0 ] || status=1
fi
name=$(basename "$fuzzer")
if [ "$status" -ne 0 ]; then
  tail -n 60 "$work/log"
  crash=$(ls -t "$artifacts" 2>/dev/null | head -1)
  echo "fuzz: FAILED: $name (exit $status) after ${runs:-?} runs in ${seconds} s; input: $artifacts/${crash:-?}; reproduce: $fuzzer $artifacts/${crash:-INPUT}"
  exit 1
fi
echo "fuzz: ok: $name ran ${runs:-?} inputs in ${seconds} s from $seeds seeds (corpus now $corpus, coverage ${cov:-?}): no crash, leak, timeout or sanitizer report"
