#!/usr/bin/env bash
# Horovod's rank numbers agree everywhere on uneven placements: for 3+1 tasks on 2 nodes, and
# 2+2+1 (block and cyclic) and 3+1+1 on 3, the HOROVOD_* variables spank_riseml.so sets for each
# task and what riseml.torch says in that task after hvd.init() (over PMIx, srun --mpi=pmix) are
# the same six numbers, and they are Horovod's (check_horovod_variables: cross size = nodes with a task of this local rank).
# Arguments: the build's python folder.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
# shellcheck source-path=SCRIPTDIR source=spank_common.sh
. "$(dirname "$0")/spank_common.sh"
python_build=${1:?usage: horovod_ranks_uneven.sh PYTHON_BUILD_DIR}
need_nodes 2
need_riseml_plugin
root=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONPATH=$python_build:$root/python${PYTHONPATH:+:$PYTHONPATH}

# Each task: its task_report line, then "H|<SLURM_PROCID>|" and the six numbers hvd.* gives.
# shellcheck disable=SC2016 # expanded by the task's shell
hvd_report='python3 -c "
import os, riseml.torch as hvd
hvd.init()
print(\"H|%s|%d/%d/%d/%d/%d/%d\" % (os.environ[\"SLURM_PROCID\"], hvd.rank(), hvd.size(), hvd.local_rank(),
      hvd.local_size(), hvd.cross_rank(), hvd.cross_size()), flush=True)
hvd.shutdown()"'

check_layout() { # description, tasks per node wanted (e.g. "3 1"), srun arguments...
  local what=$1 want_counts=$2 out procid numbers env_numbers counts
  shift 2
  # -O: more tasks than the testbed's CPUs on a node.
  out=$(run_bounded srun --mpi=pmix --riseml-bind=env -O --time=1 "$@" sh -c "$task_report; $hvd_report")
  # The layout srun made, by RISEML_NODE_ID: it must be the uneven one asked for.
  counts=$(grep '^T|' <<<"$out" | cut -d'|' -f7 | sort -n | uniq -c | awk '{ print $1 }' | tr '\n' ' ')
  [ "$counts" = "$want_counts " ] || fail "$what: want tasks per node $want_counts, got $counts:"$'\n'"$out"
  check_horovod_variables "$out"
  local tasks
  tasks=$(grep -c '^T|' <<<"$out")
  [ "$(grep -c '^H|' <<<"$out")" -eq "$tasks" ] || fail "$what: want $tasks hvd lines:"$'\n'"$out"
  while IFS='|' read -r _ procid numbers; do
    env_numbers=$(grep '^T|' <<<"$out" | awk -F'|' -v p="$procid" '$15 == p { print $16 "/" $17 "/" $18 "/" $19 "/" $20 "/" $21 }')
    [ "$numbers" = "$env_numbers" ] ||
      fail "$what: task $procid: hvd rank/size/local_rank/local_size/cross_rank/cross_size = $numbers, HOROVOD_* = $env_numbers:"$'\n'"$out"
  done < <(grep '^H|' <<<"$out")
  echo "$what: $tasks tasks agree"
}

# Slurm 22.05: -m plane=3 over 2 nodes places 3+1; -N3 -n5 places 2+2+1 (block) and, with
# -m plane=2, 3+1+1; -m cyclic deals the ranks out one node at a time.
check_layout "3+1 tasks" "3 1" -N2 -n4 -m plane=3
if [ "${#testbed_nodes[@]}" -ge 3 ]; then
  check_layout "2+2+1 tasks" "2 2 1" -N3 -n5
  check_layout "2+2+1 tasks, cyclic" "2 2 1" -N3 -n5 -m cyclic
  check_layout "3+1+1 tasks" "3 1 1" -N3 -n5 -m plane=2
fi
ok "HOROVOD_* from spank_riseml.so and hvd.* agree on uneven placements"
