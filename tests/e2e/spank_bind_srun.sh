#!/usr/bin/env bash
# srun --riseml-bind=auto --gpus-per-task=1 -n 4: each task its own GPU from the allocation, the
# NIC next to it, CPUs bound as planned, RISEML_LOCAL_RANK/SIZE/NODE_ID and HOROVOD_*; then on 2
# nodes, and HOROVOD_* on 2 nodes with 2 and 1 tasks.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
# shellcheck source-path=SCRIPTDIR source=spank_common.sh
. "$(dirname "$0")/spank_common.sh"
need_riseml_plugin
n=${GPUS:-4}
out=$(run_bounded srun --riseml-bind=auto --gpus-per-task=1 -n"$n" -N1 --time=1 sh -c "$task_report")
check_bound_tasks "$out" "$n"
values=$(grep '^T|' <<<"$out" | cut -d'|' -f4 | sort -n | tr '\n' ' ')
[ "$values" = "$(seq 0 $((n - 1)) | tr '\n' ' ')" ] || fail "want GPUs 0..$((n - 1)) once each, got $values"
if [ "${#testbed_nodes[@]}" -ge 2 ]; then
  out=$(run_bounded srun --riseml-bind=auto --gpus-per-task=1 -N2 --ntasks-per-node=2 --time=1 sh -c "$task_report")
  check_bound_tasks "$out" 2
  [ "$(grep '^T|' <<<"$out" | cut -d'|' -f7 | sort -u | tr '\n' ' ')" = "0 1 " ] ||
    fail "want RISEML_NODE_ID 0 and 1:"$'\n'"$out"
  [ "$(grep '^T|' <<<"$out" | cut -d'|' -f20,21 | sort -u | tr '\n' ' ')" = "0|2 1|2 " ] ||
    fail "want HOROVOD_CROSS_RANK 0 and 1 of HOROVOD_CROSS_SIZE 2:"$'\n'"$out"
  # 3 tasks on 2 nodes: the nodes differ in task count, and so do the cross sizes.
  out=$(run_bounded srun --riseml-bind=env --gpus-per-task=1 -N2 -n3 --time=1 sh -c "$task_report")
  [ "$(grep -c '^T|' <<<"$out")" -eq 3 ] || fail "want 3 task lines:"$'\n'"$out"
  check_horovod_variables "$out"
  [ "$(grep '^T|' <<<"$out" | cut -d'|' -f21 | sort | tr '\n' ' ')" = "1 2 2 " ] ||
    fail "-N2 -n3: want HOROVOD_CROSS_SIZE 2, 2 (local rank 0) and 1 (local rank 1):"$'\n'"$out"
fi
ok "each task got its own GPU and the planned environment (fixture topology: $fixture_in_use)"
