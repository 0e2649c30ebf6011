# Helpers for the end-to-end tests on the Slurm testbed (contrib/slurm/testbed); sourced.
# A test exits 0 (pass), 1 (fail, with a message saying what was expected and what came), or
# 77 (skipped: ctest's SKIP_RETURN_CODE) when the testbed is not up or has too few nodes.
set -euo pipefail
export LC_ALL=C
state=/run/riseml-testbed/state.env
test_name=$(basename "$0" .sh)

# The Python the build is for (RISEML_TEST_PYTHON from ctest: the test venv with torch 2.x, or
# Debian's /usr/bin/python3) is first on PATH, so that the jobs' `python3` is it, as for a user
# who activated their venv before sbatch (Slurm passes PATH on to the job).
test_python_bin=$(dirname "${RISEML_TEST_PYTHON:-/usr/bin/python3}")
export PATH="$test_python_bin:/usr/bin:$PATH"

fail() { echo "FAIL $test_name: $*" >&2; exit 1; }
skip() { echo "SKIP $test_name: $*"; exit 77; }
ok() { echo "ok $test_name: $*"; }

# Not up at all: skip, so a plain `ctest` without a testbed does not fail. RISEML_E2E_REQUIRE=1
# turns that into a failure.
if [ ! -f "$state" ]; then
  msg="the Slurm testbed is not up: start it with contrib/slurm/testbed/up (as root)"
  [ "${RISEML_E2E_REQUIRE:-0}" = 1 ] && fail "$msg"
  skip "$msg"
fi
grep -qx 'READY=1' "$state" ||
  fail "the testbed start did not finish (READY=0 in $state); see /var/log/riseml-testbed/"
# shellcheck disable=SC1090
. "$state" # MODE, NODES, GPUS (per node), CPUS (per node), READY
read -r -a testbed_nodes <<<"$NODES"

need_nodes() { # n: skip when the testbed has fewer nodes (loopback fallback has one)
  [ "${#testbed_nodes[@]}" -ge "$1" ] ||
    skip "needs $1 nodes, the testbed has ${#testbed_nodes[@]} (mode $MODE)"
}

# Every job is bounded twice: Slurm's time limit and a wall-clock timeout around the client.
run_bounded() { # cmd... ; stdout+stderr on stdout, fails the test on a non-zero exit
  local out rc=0
  out=$(timeout 60 "$@" 2>&1) || rc=$?
  if [ $rc -eq 124 ]; then fail "timed out after 60 s: $*${out:+$'\n'$out}"; fi
  if [ $rc -ne 0 ]; then fail "exit status $rc from: $*${out:+$'\n'$out}"; fi
  printf '%s\n' "$out"
}

# riseml submit, then wait (bounded) until the job and all its array tasks have left the queue.
# Prints the job id.
riseml_submit_and_wait() { # riseml, site, riseml.yml
  local job
  job=$(timeout 30 "$1" submit --site "$2" "$3") || fail "riseml submit $3 failed"
  [[ "$job" =~ ^[0-9]+$ ]] || fail "riseml submit printed '$job', not a job id"
  for _ in $(seq 1 "${RISEML_E2E_WAIT_S:-100}"); do
    [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && { echo "$job"; return 0; }
    sleep 1
  done
  scancel "$job" 2>/dev/null || true
  fail "job $job still queued or running after ${RISEML_E2E_WAIT_S:-100} s: $(squeue -j "$job" 2>&1)"
}

# The final state of a job that has left the queue (scontrol keeps it for MinJobAge).
job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -1; }
