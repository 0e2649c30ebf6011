#!/usr/bin/env bash
# The step model (docs/model.md) against measurement: per link rate and node count, first
# `riseml-bench --fit` on those nodes (the model's link, reduction and copy parameters), then
# riseml-replay of each model in float32 and with --fp16, one rank per node. model_validation.py
# then sets `riseml estimate --network` of each fit beside each replay (docs/scaling.md).
#   sudo tools/sweeps/model-validation.sh OUT_DIR [--rates 1gbit,2.5gbit] [--nodes 2,4,8]
#        [--models resnet50,resnet101,inception_v3,vgg16] [--steps 3] [--rounds 1]
#        [--workloads DIR]
# --rounds N replays every cell N times, each in fresh processes, after all fits (round by
# round, so a slow minute of the machine hits one round of many cells, not every round of one).
# --workloads DIR: models with a DIR/MODEL.workload are replayed from it (e.g. the shapes of
# model/workloads/generate_shape_workloads.py DIR).
# Writes OUT_DIR/fit-RATE-NN.yml (and .log), OUT_DIR/replay.txt (one summary line a run) and
# OUT_DIR/replay-*.log.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=sweep-lib.sh
. "$repo/tools/sweeps/sweep-lib.sh"
sweep_replay_args model-validation "$@"
bench=${RISEML_BENCH:-$repo/build/tools/bench/riseml-bench}
replay=${RISEML_REPLAY:-$repo/build/tools/bench/riseml-replay}
sweep_need model-validation "$bench" RISEML_BENCH
sweep_need model-validation "$replay" RISEML_REPLAY

for rate in "${rate_list[@]}"; do
  "$repo/contrib/slurm/testbed/up" "$max_nodes" --link "$rate" >/dev/null
  for n in "${node_list[@]}"; do
    fit="$out/fit-$rate-N$n.yml"
    timeout 600 srun -N "$n" --ntasks-per-node 1 --mpi=pmix --export=ALL "$bench" --fit "$fit" \
      >"${fit%.yml}.log" 2>&1 || echo "model-validation: ${fit%.yml}.log failed" >&2
  done
  for r in $(seq 1 "$rounds"); do
    round=
    [ "$rounds" -gt 1 ] && round=$r
    for n in "${node_list[@]}"; do
      for model in "${model_list[@]}"; do
        sweep_replay_run model-validation "$rate" "$n" "$model" fp32 1
        sweep_replay_run model-validation "$rate" "$n" "$model" fp16 1 --fp16
      done
    done
  done
done
