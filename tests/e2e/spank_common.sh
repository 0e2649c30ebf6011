# Helpers for the spank_riseml.so end-to-end tests; sourced after common.sh.
# shellcheck shell=bash

plugstack=/etc/slurm/plugstack.conf
# The testbed's fixture node (contrib/slurm/testbed/fake-node-topology.xml): 4 GPUs, GPUs 0-1
# behind the switch with mlx5_0/ib0, GPUs 2-3 behind the one with mlx5_1/ib1, mlx5_2 excluded.
fixture_in_use=0

need_riseml_plugin() {
  grep -q 'spank_riseml\.so' "$plugstack" 2>/dev/null ||
    skip "spank_riseml.so is not in $plugstack: build it (build/spank_plugin/) or set RISEML_SPANK_PLUGIN, then rerun contrib/slurm/testbed/up"
  srun --help 2>&1 | grep -q -- '--riseml-bind' ||
    fail "$plugstack lists spank_riseml.so but 'srun --help' has no --riseml-bind: the plugin did not load (see /var/log/riseml-testbed/)"
  if grep -q 'spank_riseml\.so.*topology=[^ ]*fake-node-topology\.xml.*nic_exclude=mlx5_2' "$plugstack"; then
    fixture_in_use=1
  fi
}

# "0-2,5" -> "0 1 2 5"
expand_cpus() {
  local part parts expanded=()
  IFS=, read -r -a parts <<<"$1"
  for part in "${parts[@]}"; do
    if [[ $part == *-* ]]; then mapfile -t -O "${#expanded[@]}" expanded < <(seq "${part%-*}" "${part#*-}"); else expanded+=("$part"); fi
  done
  echo "${expanded[*]}"
}

# One line per task with what the plugin gave it, fields separated by '|':
# host|SLURM_LOCALID|CUDA_VISIBLE_DEVICES|RISEML_LOCAL_RANK|RISEML_LOCAL_SIZE|RISEML_NODE_ID|
# NCCL_IB_HCA|NCCL_SOCKET_IFNAME|UCX_NET_DEVICES|OMP_NUM_THREADS|CUDA_DEVICE_ORDER|
# Cpus_allowed_list|RISEML_PLAN|SLURM_PROCID|HOROVOD_RANK|HOROVOD_SIZE|HOROVOD_LOCAL_RANK|
# HOROVOD_LOCAL_SIZE|HOROVOD_CROSS_RANK|HOROVOD_CROSS_SIZE (fields 2 to 21 of cut -d'|')
# shellcheck disable=SC2016,SC2034 # expanded by the task's shell; used by the sourcing scripts
task_report='echo "T|$(hostname)|$SLURM_LOCALID|${CUDA_VISIBLE_DEVICES-unset}|${RISEML_LOCAL_RANK-unset}|${RISEML_LOCAL_SIZE-unset}|${RISEML_NODE_ID-unset}|${NCCL_IB_HCA-unset}|${NCCL_SOCKET_IFNAME-unset}|${UCX_NET_DEVICES-unset}|${OMP_NUM_THREADS-unset}|${CUDA_DEVICE_ORDER-unset}|$(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)|${RISEML_PLAN-unset}|$SLURM_PROCID|${HOROVOD_RANK-unset}|${HOROVOD_SIZE-unset}|${HOROVOD_LOCAL_RANK-unset}|${HOROVOD_LOCAL_SIZE-unset}|${HOROVOD_CROSS_RANK-unset}|${HOROVOD_CROSS_SIZE-unset}"'

# Checks the task lines of one --riseml-bind=auto step: TASKS_PER_NODE tasks on each node, each
# with its own GPU and the environment of its plan. Argument: the output, tasks per node.
check_bound_tasks() {
  local out=$1 per_node=$2 lines host lid cvd rank size node hca ifname ucx omp order cpus plan
  lines=$(grep '^T|' <<<"$out" || true)
  declare -A seen_gpu=() seen_rank=() node_of_host=()
  while IFS='|' read -r _ host lid cvd rank size node hca ifname ucx omp order cpus plan _; do
    [[ $cvd =~ ^[0-9]+$ ]] || fail "$host task $lid: want one GPU index in CUDA_VISIBLE_DEVICES, got '$cvd':"$'\n'"$out"
    [ "$cvd" -lt "${GPUS:-4}" ] || fail "$host task $lid: GPU $cvd is outside the node's ${GPUS:-4}:"$'\n'"$out"
    [ -z "${seen_gpu[$host/$cvd]:-}" ] || fail "$host: GPU $cvd given to two tasks:"$'\n'"$out"
    seen_gpu[$host/$cvd]=1
    [ "$rank" = "$lid" ] || fail "$host: RISEML_LOCAL_RANK=$rank for SLURM_LOCALID=$lid"
    [ -z "${seen_rank[$host/$rank]:-}" ] || fail "$host: local rank $rank twice"
    seen_rank[$host/$rank]=1
    [ "$size" = "$per_node" ] || fail "$host task $lid: RISEML_LOCAL_SIZE=$size, want $per_node"
    [[ $node =~ ^[0-9]+$ ]] || fail "$host task $lid: RISEML_NODE_ID=$node"
    [ -z "${node_of_host[$host]:-}" ] || [ "${node_of_host[$host]}" = "$node" ] || fail "$host: two node ids"
    node_of_host[$host]=$node
    [ "$order" = PCI_BUS_ID ] || fail "$host task $lid: CUDA_DEVICE_ORDER=$order"
    [[ $omp =~ ^[1-9][0-9]*$ ]] || fail "$host task $lid: OMP_NUM_THREADS=$omp"
    [[ $plan == "task=$lid gpus="* ]] || fail "$host task $lid: RISEML_PLAN='$plan'"
    local want_cpus
    want_cpus=$(sed -n 's/.* cpus=\([^ ]*\) .*/\1/p' <<<"$plan")
    [ "$(expand_cpus "$cpus")" = "$(expand_cpus "$want_cpus")" ] ||
      fail "$host task $lid: bound to CPUs $cpus, the plan says $want_cpus"
    if [ "$fixture_in_use" = 1 ]; then
      local want_nic=mlx5_0 want_if=ib0
      if [ "$cvd" -ge 2 ]; then want_nic=mlx5_1 want_if=ib1; fi
      [ "$hca" = "=$want_nic:1" ] || fail "$host task $lid (GPU $cvd): NCCL_IB_HCA=$hca, want =$want_nic:1"
      [ "$ucx" = "$want_nic:1" ] || fail "$host task $lid (GPU $cvd): UCX_NET_DEVICES=$ucx, want $want_nic:1"
      [ "$ifname" = "=$want_if" ] || fail "$host task $lid (GPU $cvd): NCCL_SOCKET_IFNAME=$ifname, want =$want_if"
    else
      [ "$hca" != unset ] || [ "$ifname" != unset ] || fail "$host task $lid: neither NCCL_IB_HCA nor NCCL_SOCKET_IFNAME"
    fi
  done <<<"$lines"
  local want=$((per_node * ${#node_of_host[@]}))
  [ "$(grep -c . <<<"$lines")" -eq "$want" ] || fail "want $want task lines:"$'\n'"$out"
  [ "$(printf '%s\n' "${node_of_host[@]}" | sort -u | wc -l)" -eq "${#node_of_host[@]}" ] ||
    fail "two nodes with the same RISEML_NODE_ID:"$'\n'"$out"
  check_horovod_variables "$out"
}

# Checks HOROVOD_* of every task line against Horovod's definitions, from the layout the lines
# show (each node's task count by RISEML_NODE_ID): rank = SLURM_PROCID, size = all tasks, local
# rank/size within the node, cross size = the nodes with a task of this local rank, cross rank =
# this node's index among them. Argument: the output of a step that ran $task_report.
check_horovod_variables() {
  local out=$1 lines host lid node procid hrank hsize hlrank hlsize hcrank hcsize total m want_rank want_size
  lines=$(grep '^T|' <<<"$out" || true)
  total=$(grep -c . <<<"$lines")
  declare -A count=() seen=()
  while IFS='|' read -r _ host lid _ _ _ node _ _ _ _ _ _ _ procid _; do
    count[$node]=$((${count[$node]:-0} + 1))
  done <<<"$lines"
  while IFS='|' read -r _ host lid _ _ _ node _ _ _ _ _ _ _ procid hrank hsize hlrank hlsize hcrank hcsize; do
    want_rank=0 want_size=0
    for m in "${!count[@]}"; do
      [ "${count[$m]}" -gt "$lid" ] || continue
      want_size=$((want_size + 1))
      if [ "$m" -lt "$node" ]; then want_rank=$((want_rank + 1)); fi
    done
    local got="$hrank/$hsize/$hlrank/$hlsize/$hcrank/$hcsize"
    local want="$procid/$total/$lid/${count[$node]}/$want_rank/$want_size"
    [ "$got" = "$want" ] ||
      fail "$host task $lid: HOROVOD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE/CROSS_RANK/CROSS_SIZE=$got, want $want:"$'\n'"$out"
    [ -z "${seen[$hrank]:-}" ] || fail "HOROVOD_RANK=$hrank twice:"$'\n'"$out"
    seen[$hrank]=1
  done <<<"$lines"
}
