#!/usr/bin/env bash
# --gpus-per-task=1 hands each task on one node a different fake GPU in CUDA_VISIBLE_DEVICES
# (4 tasks for the default 4 GPUs a node).
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
n=${GPUS:-4}
out=$(run_bounded srun --gpus-per-task=1 -n"$n" -N1 --time=1 printenv CUDA_VISIBLE_DEVICES)
[ "$(grep -c . <<<"$out")" -eq "$n" ] || fail "want $n lines, got:"$'\n'"$out"
grep -qvxE '[0-9]+' <<<"$out" && fail "want one GPU index per task, got:"$'\n'"$out"
values=$(sort -n -u <<<"$out" | tr '\n' ' ')
want=$(seq 0 $((n - 1)) | tr '\n' ' ')
[ "$values" = "$want" ] || fail "want $n distinct GPUs ($want), got: $values"
ok "CUDA_VISIBLE_DEVICES: $values"
