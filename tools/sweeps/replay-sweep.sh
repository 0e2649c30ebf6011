#!/usr/bin/env bash
# riseml-replay of the shipped models across testbed nodes at shaped link rates: the scaling
# efficiencies of docs/scaling.md.
#   sudo tools/sweeps/replay-sweep.sh OUT_DIR [--rates 1gbit,2.5gbit] [--nodes 2,4,8]
#        [--models resnet50,resnet101,inception_v3,vgg16] [--steps 3]
# Per rate and node count, four ways: 1 rank per node in float32 and with --fp16, and 2 ranks
# per node with the default algorithm (hierarchical: shared memory inside a node, a ring across)
# and with RISEML_ALGORITHM=ring (one flat ring). Every run's summary line goes to
# OUT_DIR/replay.txt (and its whole output to OUT_DIR/replay-*.log).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=sweep-lib.sh
. "$repo/tools/sweeps/sweep-lib.sh"
sweep_replay_args replay-sweep "$@"
replay=${RISEML_REPLAY:-$repo/build/tools/bench/riseml-replay}
sweep_need replay-sweep "$replay" RISEML_REPLAY

for rate in "${rate_list[@]}"; do
  "$repo/contrib/slurm/testbed/up" "$max_nodes" --link "$rate" >/dev/null
  for n in "${node_list[@]}"; do
    for model in "${model_list[@]}"; do
      RISEML_ALGORITHM=auto sweep_replay_run replay-sweep "$rate" "$n" "$model" fp32 1
      RISEML_ALGORITHM=auto sweep_replay_run replay-sweep "$rate" "$n" "$model" fp16 1 --fp16
      RISEML_ALGORITHM=auto sweep_replay_run replay-sweep "$rate" "$n" "$model" hier 2
      RISEML_ALGORITHM=ring sweep_replay_run replay-sweep "$rate" "$n" "$model" ring 2
    done
  done
done
