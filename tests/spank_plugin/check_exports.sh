#!/usr/bin/env bash
# spank_riseml.so must export plugin_name/type/version and slurm_spank_* and nothing else (the
# C++ runtime and our classes stay inside; slurmstepd is a C program).
set -euo pipefail
so=${1:?usage: check_exports.sh spank_riseml.so}
syms=$(nm -D --defined-only "$so" | awk '{print $3}' | sort)
for want in plugin_name plugin_type plugin_version slurm_spank_init slurm_spank_init_post_opt \
  slurm_spank_user_init slurm_spank_task_init slurm_spank_exit; do
  grep -qx "$want" <<<"$syms" || { echo "FAIL: $so does not export $want"; exit 1; }
done
extra=$(grep -vE '^(plugin_(name|type|version)|slurm_spank_.*)$' <<<"$syms" || true)
[ -z "$extra" ] || { echo "FAIL: $so exports more than the SPANK symbols:"; echo "$extra"; exit 1; }
echo "ok: $(wc -l <<<"$syms") symbols, all SPANK"
