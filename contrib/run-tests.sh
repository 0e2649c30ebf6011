#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test.
#   stages: werror (build + unit/integration tests), sanitize (ASan/UBSan build + tests),
#           fuzz (bounded libFuzzer run of the parsers), e2e (real Slurm testbed),
#           packaging (the .deb packages built, linted, installed, run and purged; with e2e
#           also selected, a job on the testbed through the installed plugin and tools).
# RISEML_TEST_STAGES="werror sanitize" runs a subset; RISEML_FUZZ_SECONDS bounds the fuzz run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
stages=${RISEML_TEST_STAGES:-werror sanitize fuzz e2e packaging}
jobs=${RISEML_BUILD_JOBS:-$(nproc)}
failed=()

bash contrib/install-deps.sh
# The venv the werror build and its tests use: torch 2.x and the rest of
# contrib/python-requirements.txt from PyPI (downloads cached in build-venv.cache), and the real
# Horovod built for that torch, the peer riseml.torch is compared with (wheel cached).
python=$(bash contrib/python-venv.sh "$root/build-venv" "$root/build-venv.cache")
bash contrib/horovod-peer.sh "$root/build-venv" "$root/build-venv.cache/horovod"

# Line tables only (-g1): backtraces and sanitizer reports keep file:line, and the two builds
# take a quarter less time than with full debug info (CI's time bound).
configure_and_build() { # dir, extra cmake args...
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DRISEML_WERROR=ON -DRISEML_TESTS=ON \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
    "-DCMAKE_C_FLAGS_DEBUG=-g1" "-DCMAKE_CXX_FLAGS_DEBUG=-g1" "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

# Each stage's output is kept, so that the end of the run (all a CI summary may show) can say
# what failed in every failed stage, not only in the last one.
stage_logs=$(mktemp -d)
trap 'rm -rf "$stage_logs"' EXIT
run_stage() { # name, command...
  local name=$1; shift
  echo "=== stage $name"
  if "$@" 2>&1 | tee "$stage_logs/$name.log"; then
    echo "=== stage $name: ok"
  else
    echo "=== stage $name: FAILED"
    failed+=("$name")
  fi
}

stage_werror() {
  configure_and_build build "-DPYTHON_EXECUTABLE=$python" &&
    ctest --test-dir build --output-on-failure -j "$jobs" -LE "e2e|packaging"
}

stage_sanitize() {
  # The C++ components; the Python binding is loaded by an uninstrumented interpreter, so its
  # tests run in the werror stage only.
  configure_and_build build-asan -DRISEML_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
    -DRISEML_COMPONENTS="translator;spank_plugin;runtime;tools" &&
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE "e2e|nosanitize|packaging"
}

stage_fuzz() {
  # The fuzz targets only (clang): the riseml.yml/site parsers, and topology loading (through
  # riseml-topology) + planning. RISEML_FUZZ_SECONDS (default 60) is shared between the two.
  local seconds=${RISEML_FUZZ_SECONDS:-60} rc=0
  local half=$(((seconds + 1) / 2))
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DRISEML_WERROR=ON -DRISEML_FUZZ=ON \
    -DRISEML_TESTS=OFF -DRISEML_COMPONENTS="translator;spank_plugin" -DCMAKE_BUILD_TYPE=Debug \
    >/dev/null &&
    cmake --build build-fuzz -j "$jobs" --target riseml-fuzz-parser riseml-fuzz-topology || return 1
  bash tests/fuzz/run.sh build-fuzz "$half" parser || rc=1
  bash tests/fuzz/run.sh build-fuzz "$half" topology || rc=1
  return $rc
}

stage_e2e() {
  if [ ! -x contrib/slurm/testbed/up ]; then
    echo "no Slurm testbed yet: skipped"
    return 0
  fi
  local rc=0
  contrib/slurm/testbed/up || rc=$?
  if [ $rc -eq 0 ]; then
    ctest --test-dir build --output-on-failure -L e2e -LE e2e_shaped || rc=$?
  fi
  # Then 4 nodes with 1 Gbit/s links: the shape holds, and scaling through riseml submit.
  if [ $rc -eq 0 ]; then
    contrib/slurm/testbed/up 4 --link 1gbit || rc=$?
    if [ $rc -eq 0 ]; then
      RISEML_E2E_REQUIRE=1 ctest --test-dir build --output-on-failure -L e2e_shaped || rc=$?
    fi
  fi
  contrib/slurm/testbed/down || rc=$?
  return $rc
}

stage_packaging() {
  # tests/packaging/deb_install_test.sh through ctest (label packaging): builds the packages in
  # build/deb (contrib/packaging/build-debs.sh), lintian, dpkg -i, the installed tools, dpkg -r/-P.
  # When the e2e stage is selected too (it runs first and stops its testbed), the same test also
  # starts the testbed with the installed spank_riseml.so, runs a job with the installed
  # `riseml submit`, and stops it again.
  local testbed=0
  if [[ " $stages " == *" e2e "* ]] && [ -x contrib/slurm/testbed/up ]; then testbed=1; fi
  cmake -S . -B build -G Ninja -DRISEML_WERROR=ON -DRISEML_TESTS=ON >/dev/null &&
    RISEML_PACKAGING_TESTBED=$testbed RISEML_BUILD_JOBS=$jobs \
      ctest --test-dir build --output-on-failure -L packaging
}

for s in $stages; do
  run_stage "$s" "stage_$s"
done

if [ ${#failed[@]} -gt 0 ]; then
  for s in "${failed[@]}"; do
    echo "--- what failed in stage $s (its lines that report a failure, the last 25):"
    grep -E '\*\*\*(Failed|Timeout|Exception)|[Ee]rror:|FAILED|^FAIL|\[  FAILED  \]' \
      "$stage_logs/$s.log" | tail -25 || echo "(no such line: see the stage's output above)"
  done
  echo "run-tests: FAILED stages: ${failed[*]}"
  exit 1
fi
echo "run-tests: all stages passed ($stages)"
