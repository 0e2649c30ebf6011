#!/usr/bin/env bash
# Regenerates the checked-in expectations from the current translator:
#   tests/translator/golden/<example>.{sbatch,warnings,diagnostics}   (tests/data/riseml-examples)
#   tests/translator/golden/<fragment>.merged.{yml,sbatch,warnings}    (fragments + fragment-base.yml)
#   tests/translator/broken/NN-name.expected                           (the broken corpus)
# Then review the diff (git diff tests/translator) as you would review code: every change in
# a script or a message is a change in behaviour.
#   usage: tests/translator/update-golden.sh [BUILD_DIR]     (default: build)
# RISEML_EXAMPLES_DIR overrides where the real riseml.yml files are.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$root/$build ;; esac

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DRISEML_COMPONENTS="translator" >/dev/null
fi
cmake --build "$build" --target riseml_translator_tests riseml >/dev/null

binary=$build/tests/translator/riseml_translator_tests
examples=${RISEML_EXAMPLES_DIR:-$root/tests/data/riseml-examples}
if [ ! -d "$examples" ]; then
  echo "update-golden: no examples at $examples (set RISEML_EXAMPLES_DIR)" >&2
  exit 1
fi
RISEML_EXAMPLES_DIR=$examples RISEML_UPDATE_GOLDEN=1 "$binary" \
  --gtest_filter='Corpus/GoldenExample.TranslatesAsGolden/*:Corpus/Fragment.TranslatesMergedIntoTheBase/*:Corpus/BrokenFile.IsRefusedWithTheExpectedMessages/*' \
  --gtest_brief=1 >/dev/null || true
# A second run compares: it must pass now.
RISEML_EXAMPLES_DIR=$examples "$binary" \
  --gtest_filter='Corpus/GoldenExample.*:Corpus/Fragment.*:Corpus/BrokenFile.*:GoldenExamples.*' \
  --gtest_brief=1
echo "update-golden: done; review with: git -C $root diff --stat -- tests/translator; git -C $root status --short tests/translator"
