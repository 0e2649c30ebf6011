#!/bin/bash
# expect_output.sh STATUS PATTERN -- command...: runs the command, prints its output, and fails
# unless it exits with STATUS and its output has a line matching each |-separated extended
# regular expression of PATTERN.
want_status=$1; patterns=$2; shift 3
out=$("$@" 2>&1); status=$?
printf '%s\n' "$out"
[ "$status" -eq "$want_status" ] || { echo "FAIL: exit status $status, want $want_status"; exit 1; }
IFS='|' read -ra list <<< "$patterns"
for p in "${list[@]}"; do
  grep -Eq -- "$p" <<< "$out" || { echo "FAIL: no line matches: $p"; exit 1; }
done
echo "ok"
