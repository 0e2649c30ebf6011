#!/usr/bin/env bash
# riseml-bench across testbed nodes at shaped link rates, beside Open MPI (TCP between nodes)
# and Gloo, in one run per node count: the tables and plots of docs/scaling.md.
#   sudo tools/sweeps/cross-node-sweep.sh OUT_DIR [--rates 1gbit,2.5gbit] [--nodes 2,4,8]
#        [--ppn 1,2] [--sizes 64K,1M,16M,64M] [--rounds 3]
# For each rate it starts the testbed with as many nodes as the largest count (`up N --link
# RATE`), checks the link with linkcheck, then runs `srun -N n --ntasks-per-node p --mpi=pmix
# riseml-bench --peers mpi,gloo --limit` for every n and p. Writes OUT_DIR/RATE-Nn-Pp.{txt,csv,png}
# and OUT_DIR/RATE-linkcheck.txt. The testbed is left up with the last rate.
# Open MPI gets mpi_yield_when_idle=1: with more ranks than this machine's cores its default
# busy polling starves the other ranks (see docs/scaling.md).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=sweep-lib.sh
. "$repo/tools/sweeps/sweep-lib.sh"
out=${1:?usage: $0 OUT_DIR [--rates 1gbit,2.5gbit] [--nodes 2,4,8] [--ppn 1,2] [--sizes ...] [--rounds 3]}
shift
rates=1gbit,2.5gbit nodes=2,4,8 ppn=1,2 sizes=64K,1M,16M,64M rounds=3
while [ $# -gt 0 ]; do
  case $1 in
    --rates) rates=$2 ;; --nodes) nodes=$2 ;; --ppn) ppn=$2 ;; --sizes) sizes=$2 ;; --rounds) rounds=$2 ;;
    *) echo "cross-node-sweep: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
bench=${RISEML_BENCH:-$repo/build/tools/bench/riseml-bench}
sweep_need cross-node-sweep "$bench" RISEML_BENCH
mkdir -p "$out"
IFS=, read -r -a rate_list <<<"$rates"
IFS=, read -r -a node_list <<<"$nodes"
IFS=, read -r -a ppn_list <<<"$ppn"
max_nodes=$(sweep_max "$nodes")

for rate in "${rate_list[@]}"; do
  "$repo/contrib/slurm/testbed/up" "$max_nodes" --link "$rate" >/dev/null
  "$repo/contrib/slurm/testbed/linkcheck" --seconds 5 | tee "$out/$rate-linkcheck.txt"
  for n in "${node_list[@]}"; do
    for p in "${ppn_list[@]}"; do
      name="$out/$rate-N$n-P$p"
      echo "cross-node-sweep: $rate, $n nodes, $p per node ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))"
      OMPI_MCA_mpi_yield_when_idle=1 timeout 1800 srun -N "$n" --ntasks-per-node "$p" --mpi=pmix --export=ALL \
        "$bench" --peers mpi,gloo --limit --modes back-to-back --rounds "$rounds" --sizes "$sizes" \
        --plot "$name.png" >"$name.txt" 2>&1 || echo "cross-node-sweep: $name failed (see $name.txt)"
      awk '/busbw ratio/{f=1} f' "$name.txt" | head -8
    done
  done
done
