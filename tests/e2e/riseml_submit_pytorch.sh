#!/usr/bin/env bash
# The whole user story: riseml submit of contrib/examples/pytorch-digits (riseml.torch, Horovod's
# API) on 2 nodes x 2 processes, bound by spank_riseml.so (--riseml-bind=verbose shows each
# task's plan in the log), trains to a good accuracy, checkpoints on rank 0, and a second submit
# resumes from the last checkpoint.
# Arguments: the riseml binary, the build's python folder, a scratch folder.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
# shellcheck source-path=SCRIPTDIR source=spank_common.sh
. "$(dirname "$0")/spank_common.sh"
riseml=${1:?usage: riseml_submit_pytorch.sh RISEML PYTHON_BUILD_DIR SCRATCH}
python_build=${2:?usage: riseml_submit_pytorch.sh RISEML PYTHON_BUILD_DIR SCRATCH}
dir=${3:?usage: riseml_submit_pytorch.sh RISEML PYTHON_BUILD_DIR SCRATCH}
need_nodes 2
need_riseml_plugin
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$dir" && mkdir -p "$dir"
cp "$root"/contrib/examples/pytorch-digits/*.py "$root"/contrib/examples/pytorch-digits/riseml.yml "$dir/"
sed -i 's/--epochs 10/--epochs 6/' "$dir/riseml.yml"
printf 'bind: verbose\ncontainers: none\n' >"$dir/site.yml"
# The job inherits this environment (sbatch --export=ALL): Debian's python with torch, and the
# binding from the build tree.
export RISEML_E2E_WAIT_S=240
export PYTHONPATH=$python_build:$root/python${PYTHONPATH:+:$PYTHONPATH}

job=$(riseml_submit_and_wait "$riseml" "$dir/site.yml" "$dir/riseml.yml")
log=$dir/riseml-pytorch-digits-$job.out
[ "$(job_state "$job")" = COMPLETED ] || fail "job $job ended $(job_state "$job"):"$'\n'"$(cat "$log")"
grep -q 'initial weights identical on 4 ranks' "$log" || fail "no broadcast check in $log:"$'\n'"$(cat "$log")"
[ "$(grep -c '^\([0-9]*: \)\?riseml-bind: ' "$log")" -ge 4 ] || fail "want the plugin's plan for 4 tasks in $log"
accuracy=$(sed -n 's/^0: epoch 6: loss [0-9.]*, test accuracy \([0-9.]*\)$/\1/p' "$log")
[ -n "$accuracy" ] || fail "no 'epoch 6' line in $log:"$'\n'"$(cat "$log")"
awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.85) }' || fail "test accuracy $accuracy < 0.85"
first=$(sed -n 's/^0: epoch 1: loss \([0-9.]*\),.*/\1/p' "$log")
last=$(sed -n 's/^0: epoch 6: loss \([0-9.]*\),.*/\1/p' "$log")
awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f / 2) }' || fail "loss $first -> $last did not halve"
ls "$dir"/checkpoints/checkpoint-6.pt >/dev/null 2>&1 || fail "no checkpoint-6.pt in $dir/checkpoints"

# Resubmitted with more epochs, it resumes from epoch 6.
sed -i 's/--epochs 6/--epochs 8/' "$dir/riseml.yml"
job2=$(riseml_submit_and_wait "$riseml" "$dir/site.yml" "$dir/riseml.yml")
log2=$dir/riseml-pytorch-digits-$job2.out
grep -q 'resuming from .*checkpoint-6.pt (epoch 6)' "$log2" || fail "no resume in $log2:"$'\n'"$(cat "$log2")"
grep -q '^0: epoch 8: ' "$log2" || fail "no epoch 8 in $log2"
grep -q '^0: epoch 1: ' "$log2" && fail "the resumed job trained epoch 1 again"
ok "job $job: 4 ranks on 2 nodes, loss $first -> $last, accuracy $accuracy; job $job2 resumed"
