# Shared by the sweeps in this folder; sourced, never run.
# shellcheck shell=bash

# Exits with a message unless the program exists: sweep_need NAME PATH ENV_VAR
sweep_need() {
  [ -x "$2" ] || { echo "$1: no $2 (build first, or set $3)" >&2; exit 1; }
}

# The largest number of a comma list ("2,4,8" -> 8).
sweep_max() {
  local n max=0
  IFS=, read -r -a _list <<<"$1"
  for n in "${_list[@]}"; do [ "$n" -gt "$max" ] && max=$n; done
  echo "$max"
}

# The replay sweeps' arguments: sweep_replay_args NAME OUT_DIR [--rates ...] [--nodes ...]
# [--models ...] [--steps N] [--rounds N] [--workloads DIR]. Sets out, rate_list, node_list,
# model_list, steps, rounds, workloads and max_nodes, and makes OUT_DIR. A model with a file
# DIR/MODEL.workload is replayed from it, else it is one riseml-replay ships.
# shellcheck disable=SC2034  # the variables are the sweep's, which sources this
sweep_replay_args() {
  local name=$1 rates=1gbit,2.5gbit nodes=2,4,8 models=resnet50,resnet101,inception_v3,vgg16
  shift
  out=${1:?usage: $name OUT_DIR [--rates 1gbit,2.5gbit] [--nodes 2,4,8] [--models ...] [--steps 3]}
  shift
  steps=3
  rounds=1
  workloads=
  while [ $# -gt 0 ]; do
    case $1 in
      --rates) rates=$2 ;; --nodes) nodes=$2 ;; --models) models=$2 ;; --steps) steps=$2 ;;
      --rounds) rounds=$2 ;; --workloads) workloads=$2 ;;
      *) echo "$name: unknown argument $1" >&2; exit 2 ;;
    esac
    shift 2
  done
  mkdir -p "$out"
  IFS=, read -r -a rate_list <<<"$rates"
  IFS=, read -r -a node_list <<<"$nodes"
  IFS=, read -r -a model_list <<<"$models"
  max_nodes=$(sweep_max "$nodes")
}

# One replay of a sweep: sweep_replay_run NAME RATE NODES MODEL VARIANT RANKS_PER_NODE [ARGS...]
# (the environment passes through, e.g. RISEML_ALGORITHM; $round, when set, names the round of
# a repeated sweep). Its whole output goes to $out/replay-RATE-NNODES-MODEL-VARIANT[-rROUND].log,
# its summary line (or a "failed" one) to $out/replay.txt and stdout. Uses the sweep's out,
# steps, workloads and replay (the riseml-replay binary).
# shellcheck disable=SC2154  # replay is set by the sweep that sources this
sweep_replay_run() {
  local name=$1 rate=$2 n=$3 model=$4 variant=$5 ppn=$6 log line what
  shift 6
  what=$model
  if [ -n "${workloads:-}" ] && [ -f "$workloads/$model.workload" ]; then what=$workloads/$model.workload; fi
  log="$out/replay-$rate-N$n-$model-$variant${round:+-r$round}.log"
  timeout 900 srun -N "$n" --ntasks-per-node "$ppn" --mpi=pmix --export=ALL \
    "$replay" "$what" --steps "$steps" --warmup 1 "$@" >"$log" 2>&1 ||
    echo "$name: $log failed" >&2
  line=$(grep '^replay: ' "$log" || echo "replay: model=$model failed")
  echo "rate=$rate nodes=$n variant=$variant${round:+ round=$round} $line" | tee -a "$out/replay.txt"
}
