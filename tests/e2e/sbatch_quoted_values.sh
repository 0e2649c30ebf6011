#!/usr/bin/env bash
# Values with blanks, quotes, '#' and backslashes reach sbatch as one argument each: the job
# Slurm holds has exactly the output and error paths and the comment the riseml.yml gave, and a
# value that reads like an option (`error: "x --time=1"`, an extra `--comment=a --time=2`) sets
# nothing else (before the translator quoted them, the first set the job's time limit).
# Arguments: riseml, a scratch folder.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
riseml=${1:?usage: sbatch_quoted_values.sh RISEML SCRATCH_DIR}
dir=${2:?usage: sbatch_quoted_values.sh RISEML SCRATCH_DIR}
rm -rf "$dir" && mkdir -p "$dir"
cat >"$dir/riseml.yml" <<'YML'
project: quoted
train:
  resources: {cpus: 1}
  run: "true"
slurm:
  time: '7'
  output: "my logs/a#b \"q\" \\ 'c'.out"
  error: "x --time=1"
  extra: ["--comment=hello --time=2 # not a comment", "--hold"]
YML
(cd "$dir" && "$riseml" translate riseml.yml >job.sh) || fail "riseml translate failed"
out=$(cd "$dir" && run_bounded sbatch job.sh)
job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' <<<"$out")
[ -n "$job" ] || fail "sbatch printed no job id:"$'\n'"$out"$'\n'"script:"$'\n'"$(grep '^#SBATCH' "$dir/job.sh")"
show=$(scontrol show job "$job")
scancel "$job"
want() { # field, value
  grep -qxF "   $1=$2" <<<"$show" || grep -qF " $1=$2 " <<<"$show " ||
    fail "job $job: want $1=$2; scontrol show job:"$'\n'"$show"$'\n'"#SBATCH lines:"$'\n'"$(grep '^#SBATCH' "$dir/job.sh")"
}
want TimeLimit 00:07:00
want StdOut "$dir/my logs/a#b \"q\" \\ 'c'.out"
want StdErr "$dir/x --time=1"
want Comment "hello --time=2 # not a comment"
ok "job $job: paths, comment and time limit as written"
