#!/bin/bash
# A stand-in for `srun --ntasks=N --nodelist=NODE ... --label program args` on this machine, for
# testing riseml-elastic without Slurm: starts N copies of the program with the task variables
# srun sets (SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS), prefixes their lines with "task: " as
# --label does, forwards SIGTERM to them, and exits with the first nonzero status (signals as
# 128+n), as srun does.
ntasks=1
while [ $# -gt 0 ]; do
  case "$1" in
    --ntasks=*) ntasks=${1#--ntasks=} ;;
    --*) ;;
    *) break ;;
  esac
  shift
done
pids=()
# As Slurm stops a step: a stopped task is continued so that it gets the SIGTERM.
trap 'kill -CONT "${pids[@]}" 2>/dev/null; kill -TERM "${pids[@]}" 2>/dev/null' TERM INT
for ((i = 0; i < ntasks; i++)); do
  SLURM_PROCID=$i SLURM_LOCALID=$i SLURM_NTASKS=$ntasks "$@" > >(sed -u "s/^/$i: /") 2>&1 &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do
  while true; do
    wait "$p"; rc=$?
    # wait returns early (>128) when a trapped signal arrives; the task is still there.
    if kill -0 "$p" 2>/dev/null; then continue; fi
    break
  done
  [ "$status" -eq 0 ] && [ "$rc" -ne 0 ] && status=$rc
done
exit $status
