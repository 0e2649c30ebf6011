#!/usr/bin/env bash
# sbatch --wait of a small script (a step on 2 nodes, 1 on the loopback fallback) returns 0 and
# leaves a readable output file. Argument: a scratch folder on the filesystem every node shares.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
dir=${1:?usage: sbatch_wait.sh SCRATCH_DIR}
n=2
[ "${#testbed_nodes[@]}" -ge 2 ] || n=1
rm -rf "$dir" && mkdir -p "$dir"
cat >"$dir/job.sh" <<JOB
#!/bin/bash
#SBATCH -N$n -n$n --time=1
echo "batch host \$(hostname)"
srun --time=1 hostname | sort | sed 's/^/step host /'
echo "batch done"
JOB
out=$(cd "$dir" && run_bounded sbatch --wait -o "$dir/out-%j.txt" "$dir/job.sh")
job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' <<<"$out")
[ -n "$job" ] || fail "sbatch printed no job id:"$'\n'"$out"
file=$dir/out-$job.txt
[ -r "$file" ] || fail "output file $file missing or unreadable; $dir holds: $(ls "$dir")"
text=$(cat "$file")
is_node() { [[ " ${testbed_nodes[*]} " == *" $1 "* ]]; }
shape="batch host X"$'\n'"$(for ((i = 0; i < n; i++)); do echo "step host X"; done)"$'\n'"batch done"
[ "$(sed 's/host .*/host X/' <<<"$text")" = "$shape" ] ||
  fail "unexpected output in $file:"$'\n'"$text"$'\n'"wanted the shape:"$'\n'"$shape"
while read -r _ _ h; do
  is_node "$h" || fail "'$h' in $file is not a testbed node (${testbed_nodes[*]})"
done < <(grep ' host ' <<<"$text")
steps=$(sed -n 's/^step host //p' <<<"$text" | sort -u | wc -l)
[ "$steps" -eq "$n" ] || fail "want the step on $n distinct nodes:"$'\n'"$text"
ok "job $job wrote $file"
