#!/usr/bin/env bash
# #SBATCH --riseml-bind=auto reaches the job's sruns: each task its own GPU and environment.
# Argument: a scratch folder every node sees.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
# shellcheck source-path=SCRIPTDIR source=spank_common.sh
. "$(dirname "$0")/spank_common.sh"
dir=${1:?usage: spank_bind_sbatch.sh SCRATCH_DIR}
need_riseml_plugin
n=${GPUS:-4}
rm -rf "$dir" && mkdir -p "$dir"
cat >"$dir/job.sh" <<JOB
#!/bin/bash
#SBATCH --riseml-bind=auto
#SBATCH -N1 -n$n --gpus-per-task=1 --time=1
srun sh -c '$task_report'
JOB
out=$(cd "$dir" && run_bounded sbatch --wait -o "$dir/out-%j.txt" "$dir/job.sh")
job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' <<<"$out")
[ -n "$job" ] || fail "sbatch printed no job id:"$'\n'"$out"
[ -r "$dir/out-$job.txt" ] || fail "no output file $dir/out-$job.txt"
text=$(cat "$dir/out-$job.txt")
check_bound_tasks "$text" "$n"
ok "job $job: #SBATCH --riseml-bind=auto bound $n tasks"
