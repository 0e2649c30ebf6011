#!/usr/bin/env bash
# torch.distributed on the testbed: contrib/examples/torch-ddp-digits (DDP, the riseml backend)
# through riseml submit on 2 nodes x 2 processes, no torchrun and no MASTER_ADDR; the same script
# under srun -N2 -n4 --mpi=pmix with riseml and with gloo ends at the same loss; and a plain
# torch script that does not import riseml runs gloo under plain srun from the variables the
# SPANK plugin sets (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT ...).
# Arguments: the riseml binary, the build's python folder, a scratch folder.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
# shellcheck source-path=SCRIPTDIR source=spank_common.sh
. "$(dirname "$0")/spank_common.sh"
riseml=${1:?usage: riseml_submit_torch_ddp.sh RISEML PYTHON_BUILD_DIR SCRATCH}
python_build=${2:?usage: riseml_submit_torch_ddp.sh RISEML PYTHON_BUILD_DIR SCRATCH}
dir=${3:?usage: riseml_submit_torch_ddp.sh RISEML PYTHON_BUILD_DIR SCRATCH}
need_nodes 2
need_riseml_plugin
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$dir" && mkdir -p "$dir"
cp "$root"/contrib/examples/torch-ddp-digits/train.py "$root"/contrib/examples/torch-ddp-digits/riseml.yml "$dir/"
printf 'bind: verbose\ncontainers: none\n' >"$dir/site.yml"
export RISEML_E2E_WAIT_S=240
export PYTHONPATH=$python_build:$root/python${PYTHONPATH:+:$PYTHONPATH}

final() { sed -n 's/^\(0: \)\?\({"epochs".*\)$/\2/p' "$1" | tail -1; }
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

job=$(riseml_submit_and_wait "$riseml" "$dir/site.yml" "$dir/riseml.yml")
log=$dir/riseml-torch-ddp-digits-$job.out
[ "$(job_state "$job")" = COMPLETED ] || fail "job $job ended $(job_state "$job"):"$'\n'"$(cat "$log")"
submitted=$(final "$log")
[ -n "$submitted" ] || fail "no final line in $log:"$'\n'"$(cat "$log")"
[ "$(field "$submitted" world_size)" = 4 ] || fail "not 4 ranks: $submitted"
[ "$(field "$submitted" backend)" = riseml ] || fail "not the riseml backend: $submitted"
awk -v a="$(field "$submitted" accuracy)" 'BEGIN { exit !(a >= 0.85) }' || fail "accuracy too low: $submitted"

# The same training by hand, riseml and gloo, across the two nodes.
for backend in riseml gloo; do
  (cd "$dir" && timeout 200 srun -N2 -n4 --mpi=pmix --riseml-bind=auto \
     python3 train.py --backend "$backend" --epochs 5) >"$dir/$backend.out" 2>&1 ||
    fail "srun with $backend failed:"$'\n'"$(tail -30 "$dir/$backend.out")"
done
r=$(final "$dir/riseml.out"); g=$(final "$dir/gloo.out")
python3 - "$r" "$g" "$submitted" <<'PY' || fail "losses differ: riseml $r, gloo $g, submitted $submitted"
import json, sys
r, g, s = (json.loads(a) for a in sys.argv[1:4])
assert abs(r["loss"] - g["loss"]) < 1e-5 and r["accuracy"] == g["accuracy"], (r, g)
assert abs(r["loss"] - s["loss"]) < 1e-5, (r, s)
PY

# Plain torch, no riseml import: gloo from the plugin's variables under plain srun.
cat >"$dir/plain_gloo.py" <<'PY'
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(3) * (dist.get_rank() + 1)
dist.all_reduce(t)
print("plain gloo rank %d of %d: %s" % (dist.get_rank(), dist.get_world_size(), t.tolist()), flush=True)
# As torch asks: torch 2.15's gloo aborts at exit now and then without it ("terminate called
# without an active exception", 1 process in 60 here, no riseml involved).
dist.destroy_process_group()
PY
timeout 120 srun -N2 -n4 --riseml-bind=auto python3 "$dir/plain_gloo.py" >"$dir/plain.out" 2>&1 ||
  fail "plain gloo under srun failed:"$'\n'"$(tail -30 "$dir/plain.out")"
[ "$(grep -c 'of 4: \[10.0, 10.0, 10.0\]' "$dir/plain.out")" = 4 ] || fail "plain gloo: $(cat "$dir/plain.out")"
ok "job $job: DDP with riseml on 2 nodes x 2, loss $(field "$submitted" loss) accuracy $(field "$submitted" accuracy); srun riseml = gloo; plain gloo under srun"
