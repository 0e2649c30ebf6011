#!/usr/bin/env bash
# Lightning and torchrun users on the testbed, 2 nodes x 2 processes, the build's Python first
# on PATH (common.sh): contrib/examples/lightning-digits (Trainer, strategy DDP with
# process_group_backend="riseml") under plain srun, where Lightning's SLURMEnvironment finds the
# ranks and the SPANK plugin's MASTER_ADDR/MASTER_PORT; the same with gloo ends at the same loss;
# then the same script, and the torch DDP example, under torchrun (one agent per node, c10d
# rendezvous at the plugin's MASTER_ADDR, env:// for the workers).
# Arguments: the build's python folder, a scratch folder.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"
# shellcheck source-path=SCRIPTDIR source=spank_common.sh
. "$(dirname "$0")/spank_common.sh"
python_build=${1:?usage: lightning_torchrun.sh PYTHON_BUILD_DIR SCRATCH}
dir=${2:?usage: lightning_torchrun.sh PYTHON_BUILD_DIR SCRATCH}
need_nodes 2
need_riseml_plugin
python3 -c 'import lightning' 2>/dev/null ||
  skip "$(command -v python3) has no lightning (the test venv has: contrib/python-venv.sh)"
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$dir" && mkdir -p "$dir"
cp "$root/contrib/examples/lightning-digits/train.py" "$dir/lightning_digits.py"
cp "$root/contrib/examples/torch-ddp-digits/train.py" "$dir/ddp.py"
export PYTHONPATH=$python_build:$root/python${PYTHONPATH:+:$PYTHONPATH}

final() { grep -h '^{"epochs"' "$1" | tail -1; }
run() { # name, srun arguments...: runs in $dir, output in $dir/name.out
  local name=$1; shift
  (cd "$dir" && timeout 200 srun --time=3 "$@") >"$dir/$name.out" 2>&1 ||
    fail "$name failed:"$'\n'"$(grep -v Warning "$dir/$name.out" | tail -30)"
  [ -n "$(final "$dir/$name.out")" ] || fail "$name printed no result:"$'\n'"$(tail -30 "$dir/$name.out")"
}

lightning=(lightning_digits.py --nodes 2 --tasks-per-node 2 --epochs 4)
run lightning_riseml -N2 --ntasks-per-node=2 --riseml-bind=auto python3 "${lightning[@]}" --backend riseml
run lightning_gloo -N2 --ntasks-per-node=2 --riseml-bind=auto python3 "${lightning[@]}" --backend gloo
# shellcheck disable=SC2016
run torchrun_lightning -N2 --ntasks-per-node=1 --riseml-bind=auto sh -c 'exec torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint "$MASTER_ADDR:$MASTER_PORT" --rdzv-id "$SLURM_JOB_ID" "$@"' torchrun "${lightning[@]}" --backend riseml
# shellcheck disable=SC2016
run torchrun_ddp -N2 --ntasks-per-node=1 --riseml-bind=auto sh -c 'exec torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint "$MASTER_ADDR:$MASTER_PORT" --rdzv-id "$SLURM_JOB_ID" "$@"' torchrun ddp.py --backend riseml --epochs 4

python3 - "$(final "$dir/lightning_riseml.out")" "$(final "$dir/lightning_gloo.out")" \
  "$(final "$dir/torchrun_lightning.out")" "$(final "$dir/torchrun_ddp.out")" <<'PY' ||
import json, sys
r, g, t, d = (json.loads(a) for a in sys.argv[1:5])
for name, x in (("srun riseml", r), ("srun gloo", g), ("torchrun", t), ("torchrun ddp", d)):
    assert x["world_size"] == 4, (name, x)
assert r["backend"] == "riseml" and t["backend"] == "riseml" and d["backend"] == "riseml", (r, t, d)
assert g["backend"] == "gloo", g
assert abs(r["loss"] - g["loss"]) < 1e-5 and r["accuracy"] == g["accuracy"], (r, g)
assert abs(r["loss"] - t["loss"]) < 1e-5, (r, t)
assert r["accuracy"] >= 0.8 and d["accuracy"] >= 0.8, (r, d)
PY
  fail "results differ or too low: $(final "$dir/lightning_riseml.out") / $(final "$dir/lightning_gloo.out") / $(final "$dir/torchrun_lightning.out") / $(final "$dir/torchrun_ddp.out")"
ok "Lightning under srun (riseml = gloo) and under torchrun, the DDP example under torchrun: $(final "$dir/lightning_riseml.out")"
