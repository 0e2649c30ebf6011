#!/usr/bin/env bash
# Without --riseml-bind (default none) and with none the plugin leaves the task alone (Slurm's
# CUDA_VISIBLE_DEVICES stays); env sets the environment but binds no CPU; verbose prints
# each task's plan on srun's stderr.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
# shellcheck source-path=SCRIPTDIR source=spank_common.sh
. "$(dirname "$0")/spank_common.sh"
need_riseml_plugin
grep -q 'spank_riseml\.so.*default=' "$plugstack" && skip "plugstack.conf sets default=: this test wants the built-in default (none)"
# (Slurm itself drops a CUDA_VISIBLE_DEVICES from srun's environment on GPU nodes, so "the user's
# own" is Slurm's value here: the plugin must leave it and add nothing.)
for opt in "" --riseml-bind=none; do
  out=$(run_bounded srun $opt --gpus-per-task=1 -n2 -N1 --time=1 sh -c "$task_report")
  lines=$(grep '^T|' <<<"$out")
  [ "$(grep -c . <<<"$lines")" -eq 2 ] || fail "want 2 task lines ($opt):"$'\n'"$out"
  [ "$(cut -d'|' -f4 <<<"$lines" | sort | tr '\n' ' ')" = "0 1 " ] || fail "Slurm's CUDA_VISIBLE_DEVICES changed ($opt):"$'\n'"$out"
  [ "$(cut -d'|' -f5,12,14,16 <<<"$lines" | sort -u)" = "unset|unset|unset|unset" ] ||
    fail "RISEML_LOCAL_RANK, CUDA_DEVICE_ORDER, RISEML_PLAN or HOROVOD_RANK set without --riseml-bind ($opt):"$'\n'"$out"
done
# env: the environment, but the CPU affinity stays Slurm's (every CPU of the step).
stepd_cpus=$(run_bounded srun -n1 --time=1 sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
out=$(run_bounded srun --riseml-bind=env --gpus-per-task=1 -n2 -N1 --time=1 sh -c "$task_report")
lines=$(grep '^T|' <<<"$out")
[ "$(cut -d'|' -f5 <<<"$lines" | sort | tr '\n' ' ')" = "0 1 " ] || fail "env: want RISEML_LOCAL_RANK 0 and 1:"$'\n'"$out"
check_horovod_variables "$out"
[ "$(cut -d'|' -f13 <<<"$lines" | sort -u)" = "$stepd_cpus" ] || fail "env: CPUs were bound (want $stepd_cpus):"$'\n'"$out"
# verbose: one plan line per task on stderr, like --cpu-bind=verbose.
out=$(run_bounded srun --riseml-bind=verbose --gpus-per-task=1 -n2 -N1 --time=1 true)
[ "$(grep -c '^riseml-bind: [^ ]* task=[01] gpus=.* CUDA_VISIBLE_DEVICES=' <<<"$out")" -eq 2 ] ||
  fail "verbose: want one plan line per task, got:"$'\n'"$out"
ok "none/default leave tasks alone; env binds no CPU; verbose prints the plans"
