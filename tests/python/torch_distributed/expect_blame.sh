#!/bin/bash
# expect_blame.sh LAUNCH PYTHON TEST_BACKEND KIND: runs 3 ranks of test_backend.py KIND (rank 1
# dies or goes silent) and passes when both survivors (ranks 0 and 2) named rank 1 in time
# and none reported a failure. The launcher's own status is not the test's: a rank died.
set -u
launch=$1 python=$2 script=$3 kind=$4
out=$("$launch" -n 3 --tag-output --timeout 60 --stop-grace 20 -- "$python" "$script" "$kind" 2>&1)
echo "$out"
for r in 0 2; do
  grep -Eq "^\[$r\] rank $r: [0-9.]+ s: .*rank 1 " <<<"$out" ||
    { echo "expect_blame: rank $r did not name rank 1"; exit 1; }
done
if grep -q "FAIL rank" <<<"$out"; then echo "expect_blame: a survivor reported a failure"; exit 1; fi
echo "expect_blame: both survivors named rank 1"
