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
# [--models ...] [--steps N]. Sets out, rate_list, node_list, model_list, steps and max_nodes,
# and makes OUT_DIR.
# shellcheck disable=SC2034  # the variables are the sweep's, which sources this
sweep_replay_args() {
  local name=$1 rates=1gbit,2.5gbit nodes=2,4,8 models=resnet50,resnet101,inception_v3,vgg16
  shift
  out=${1:?usage: $name OUT_DIR [--rates 1gbit,2.5gbit] [--nodes 2,4,8] [--models ...] [--steps 3]}
  shift
  steps=3
  while [ $# -gt 0 ]; do
    case $1 in
      --rates) rates=$2 ;; --nodes) nodes=$2 ;; --models) models=$2 ;; --steps) steps=$2 ;;
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
