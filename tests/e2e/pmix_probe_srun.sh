#!/usr/bin/env bash
# riseml-pmix-probe under srun --mpi=pmix across 2 nodes (and in an sbatch job when the second
# argument is "sbatch"): every rank once, local ranks 0..k-1 on each node, node ids agree with
# host names, and every rank saw every peer's key.
# Arguments: the probe binary, srun|sbatch, a scratch folder every node sees.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
probe=${1:?usage: pmix_probe_srun.sh PROBE srun|sbatch SCRATCH}
mode=${2:?usage: pmix_probe_srun.sh PROBE srun|sbatch SCRATCH}
dir=${3:?usage: pmix_probe_srun.sh PROBE srun|sbatch SCRATCH}
need_nodes 2
rm -rf "$dir" && mkdir -p "$dir"
if [ "$mode" = sbatch ]; then
  cat >"$dir/job.sh" <<JOB
#!/bin/bash
#SBATCH -N2 -n4 --time=1
srun --mpi=pmix --time=1 "$probe"
JOB
  out=$(cd "$dir" && run_bounded sbatch --wait -o "$dir/out-%j.txt" "$dir/job.sh")
  job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' <<<"$out")
  text=$(cat "$dir/out-$job.txt")
else
  text=$(run_bounded srun -N2 -n4 --mpi=pmix --time=1 "$probe")
fi
facts=$(grep '^probe rank=[0-9]* size=' <<<"$text" || true)
[ "$(wc -l <<<"$facts")" = 4 ] || fail "want 4 fact lines:"$'\n'"$text"
for r in 0 1 2 3; do
  grep -q "^probe rank=$r size=4 " <<<"$facts" || fail "rank $r missing or wrong size:"$'\n'"$text"
  grep -q "^probe rank=$r exchange ok peers=4 hosts=2" <<<"$text" ||
    fail "rank $r did not see all 4 peers on 2 hosts:"$'\n'"$text"
done
# Per host: local ranks 0..k-1, one node id, local_size = k.
while read -r host; do
  lines=$(grep " host=$host " <<<"$facts")
  k=$(wc -l <<<"$lines")
  locals=$(sed 's/.* local_rank=\([0-9]*\) .*/\1/' <<<"$lines" | sort -n | tr '\n' ' ')
  [ "$locals" = "$(seq -s ' ' 0 $((k - 1))) " ] || fail "local ranks on $host are '$locals':"$'\n'"$text"
  grep -q " local_size=$k " <<<"$lines" || fail "local_size on $host is not $k:"$'\n'"$lines"
  [ "$(sed 's/.* node_id=\([0-9]*\) .*/\1/' <<<"$lines" | sort -u | wc -l)" = 1 ] ||
    fail "ranks on $host disagree on the node id:"$'\n'"$lines"
done < <(sed 's/.* host=\([^ ]*\) .*/\1/' <<<"$facts" | sort -u)
[ "$(sed 's/.* node_id=\([0-9]*\) .*/\1/' <<<"$facts" | sort -u | wc -l)" = 2 ] ||
  fail "want 2 distinct node ids:"$'\n'"$facts"
ok "$mode: 4 ranks on 2 nodes, facts consistent, every key seen"
