#!/usr/bin/env bash
# The Debian packages on this machine, as an admin would use them (ctest label `packaging`,
# run-tests.sh's packaging stage):
#   1. builds them (contrib/packaging/build-debs.sh BUILD_DIR) and checks their metadata;
#   2. lintian: no errors (warnings are printed);
#   3. dpkg -i; runs the INSTALLED tools in a clean environment (no PYTHONPATH, PATH of the
#      system only, working directory outside the source tree): riseml translate of real job
#      files, riseml-launch -n 2 of a riseml.torch allreduce from the installed python3-riseml,
#      riseml-plan of a topology through the installed riseml-topology, riseml-bench,
#      riseml-replay of an installed workload; the plugin is in Slurm's plugin folder and nothing
#      enables it (no file in /etc, plugstack.conf untouched);
#   4. with --testbed (or RISEML_PACKAGING_TESTBED=1): starts the Slurm testbed with the
#      installed plugin (RISEML_SPANK_PLUGIN), submits contrib/examples/pytorch-digits with the
#      installed `riseml submit` (its ranks import the installed riseml.torch), checks it, and
#      stops the testbed;
#   5. dpkg -r, dpkg -P, and /usr and /etc hold the same files as before.
# Never leaves the packages installed (or the testbed up, when it started it), also on failure.
#   deb_install_test.sh [--testbed] BUILD_DIR
# Root only (it installs packages); exits 77 (skipped) otherwise.
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "$0")/../.." && pwd)
testbed=${RISEML_PACKAGING_TESTBED:-0}
if [ "${1:-}" = --testbed ]; then testbed=1; shift; fi
build=${1:?usage: deb_install_test.sh [--testbed] BUILD_DIR}
packages=(riseml riseml-spank python3-riseml)

fail() { echo "FAIL deb_install_test: $*" >&2; exit 1; }
step() { echo "--- $*"; }
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP deb_install_test: installs packages: run as root"
  exit 77
fi
for tool in dpkg dpkg-deb lintian dpkg-shlibdeps help2man; do
  command -v "$tool" >/dev/null || fail "'$tool' not found: run contrib/install-deps.sh"
done

# Refuse to touch an installed riseml: the test would replace it and then remove it.
for p in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -qv 'not-installed'; then
    fail "$p is installed ($(dpkg-query -W -f='${Status} ${Version}' "$p")): remove it (dpkg -P $p) first"
  fi
done
for f in /usr/bin/riseml /usr/lib/python3/dist-packages/riseml /usr/libexec/riseml; do
  [ ! -e "$f" ] || fail "$f exists (a cmake --install into /usr?): remove it first, the packages would overwrite it"
done

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
plugin=/usr/lib/$multiarch/slurm-wlm/spank_riseml.so
snippet=/usr/share/riseml/plugstack.conf.d/riseml.conf
work=$(mktemp -d /tmp/riseml-deb-test.XXXXXX)
installed=0
testbed_started=0
cleanup() {
  local rc=$?
  if [ "$testbed_started" = 1 ]; then
    echo "deb_install_test: stopping the testbed it started"
    "$root/contrib/slurm/testbed/down" || true
  fi
  if [ "$installed" = 1 ]; then
    echo "deb_install_test: purging the packages"
    dpkg -P "${packages[@]}" >/dev/null || true
  fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT

# --- 1. build and metadata
step "building the packages into $build"
bash "$root/contrib/packaging/build-debs.sh" "$build" >"$work/build.log" 2>&1 ||
  fail "build-debs.sh failed:"$'\n'"$(tail -40 "$work/build.log")"
declare -A deb=()
for p in "${packages[@]}"; do
  f=$(find "$build/" -maxdepth 1 -name "${p}_*.deb" | sed "s,//,/," | head -1)
  [ -n "$f" ] || fail "no ${p}_*.deb in $build"
  [ "$(dpkg-deb -f "$f" Package)" = "$p" ] || fail "$f is not package $p"
  deb[$p]=$f
  echo "$(basename "$f"): $(du -k "$f" | cut -f1) KiB, Depends: $(dpkg-deb -f "$f" Depends)"
  for field in Maintainer Description Section Version Architecture; do
    [ -n "$(dpkg-deb -f "$f" "$field")" ] || fail "$f has no $field"
  done
  dpkg-deb -c "$f" | awk '{print $6}' | sed 's,^\.,,; s,/$,,' >"$work/$p.files"
  grep -q "^/usr/share/doc/$p/copyright$" "$work/$p.files" || fail "$p has no /usr/share/doc/$p/copyright"
  grep -q "^/usr/share/doc/$p/changelog.Debian.gz$" "$work/$p.files" || fail "$p has no changelog.Debian.gz"
  if grep -q '^/etc' "$work/$p.files"; then fail "$p ships files in /etc:"$'\n'"$(grep '^/etc' "$work/$p.files")"; fi
  if grep -q '^/usr/local' "$work/$p.files"; then fail "$p ships files in /usr/local"; fi
done
for f in /usr/bin/riseml /usr/bin/riseml-launch /usr/bin/riseml-elastic /usr/bin/riseml-plan /usr/bin/riseml-bench \
  /usr/bin/riseml-replay /usr/bin/riseml-pmix-probe /usr/libexec/riseml/riseml-topology \
  /usr/share/riseml/workloads/resnet50.workload /usr/share/riseml/plot_estimate.py \
  /usr/share/man/man1/riseml.1.gz \
  /usr/share/man/man1/riseml-launch.1.gz /usr/share/man/man1/riseml-elastic.1.gz /usr/share/man/man1/riseml-plan.1.gz; do
  grep -qx "$f" "$work/riseml.files" || fail "riseml lacks $f"
done
grep -qx "$plugin" "$work/riseml-spank.files" || fail "riseml-spank lacks $plugin"
grep -qx "$snippet" "$work/riseml-spank.files" || fail "riseml-spank lacks $snippet"
grep -qx /usr/lib/python3/dist-packages/riseml/torch/__init__.py "$work/python3-riseml.files" ||
  fail "python3-riseml lacks riseml/torch/__init__.py"
grep -Eq '^/usr/lib/python3/dist-packages/_riseml\.cpython-[0-9]+-[^/]*\.so$' "$work/python3-riseml.files" ||
  fail "python3-riseml lacks the extension _riseml for Debian's python3"
# The plugin is tied to the Slurm it was built against.
slurm_hex=$(sed -n 's/^#define SLURM_VERSION_NUMBER 0x\([0-9a-fA-F]*\).*/\1/p' /usr/include/slurm/slurm_version.h)
series=$(printf '%d.%02d' "0x${slurm_hex:0:2}" "0x${slurm_hex:2:2}")
depends=$(dpkg-deb -f "${deb[riseml-spank]}" Depends)
[[ $depends == *"slurm-wlm-basic-plugins (>= $series)"* && $depends == *"slurm-wlm-basic-plugins (<< "* ]] ||
  fail "riseml-spank's Depends does not pin Slurm $series: $depends"
[[ $depends == *"riseml (= $(dpkg-deb -f "${deb[riseml]}" Version))"* ]] ||
  fail "riseml-spank does not depend on the same riseml: $depends"
[[ $(dpkg-deb -f "${deb[python3-riseml]}" Depends) == *"python3 (<< "* ]] ||
  fail "python3-riseml does not pin its python3 version"

# --- 2. lintian
step "lintian"
lintian_rc=0
lintian --tag-display-limit 0 "${deb[@]}" >"$work/lintian.txt" 2>&1 || lintian_rc=$?
cat "$work/lintian.txt"
if grep -q '^E: ' "$work/lintian.txt"; then fail "lintian reports errors (above)"; fi
[ "$lintian_rc" -eq 0 ] || fail "lintian exited with $lintian_rc"
echo "lintian: $(grep -c '^W: ' "$work/lintian.txt" || true) warning(s), no errors"

# --- 3. install and run
snapshot() { find /usr /etc -xdev 2>/dev/null | sort; }
step "dpkg -i"
snapshot >"$work/before"
plugstack_sum=$(md5sum /etc/slurm/plugstack.conf 2>/dev/null || echo none)
installed=1
dpkg -i "${deb[riseml]}" "${deb[riseml-spank]}" "${deb[python3-riseml]}" >"$work/dpkg-i.log" 2>&1 ||
  fail "dpkg -i failed:"$'\n'"$(cat "$work/dpkg-i.log")"
for p in "${packages[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p")" = "install ok installed" ] || fail "$p is not installed"
done

# Nothing enables the plugin: no new file in /etc, plugstack.conf as it was.
snapshot >"$work/installed"
new_etc=$(comm -13 "$work/before" "$work/installed" | grep '^/etc' || true)
[ -z "$new_etc" ] || fail "installing added files to /etc:"$'\n'"$new_etc"
[ "$(md5sum /etc/slurm/plugstack.conf 2>/dev/null || echo none)" = "$plugstack_sum" ] ||
  fail "installing changed /etc/slurm/plugstack.conf"
if grep -rqs spank_riseml /etc/slurm/plugstack.conf.d/; then
  fail "a file in /etc/slurm/plugstack.conf.d names spank_riseml.so after install"
fi
[ -f "$plugin" ] || fail "no $plugin"
nm -D --defined-only "$plugin" | grep -qw slurm_spank_init || fail "$plugin does not export slurm_spank_init"
grep -qx "required $plugin" "$snippet" || fail "$snippet does not name $plugin:"$'\n'"$(cat "$snippet")"

# The installed tools, with the system's PATH only and no PYTHONPATH.
clean=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$work" LC_ALL=C.UTF-8 TMPDIR=/tmp)
run() { # name, command...: runs it in $work with the clean environment; prints its output
  local name=$1 out rc=0
  shift
  out=$(cd "$work" && timeout 120 "${clean[@]}" "$@" 2>&1) || rc=$?
  [ $rc -eq 0 ] || fail "$name: exit status $rc from: $*"$'\n'"$out"
  printf '%s\n' "$out"
}
step "installed tools"
for t in riseml riseml-launch riseml-elastic riseml-plan riseml-bench riseml-replay riseml-pmix-probe; do
  [ "$("${clean[@]}" bash -c "command -v $t")" = "/usr/bin/$t" ] || fail "$t is not /usr/bin/$t"
  zcat "/usr/share/man/man1/$t.1.gz" | grep -q '^\.TH' || fail "no man page for $t"
done
out=$(run version riseml --version)
[[ $out == "riseml "* ]] || fail "riseml --version: $out"

# riseml estimate: the installed workloads and plot script.
cp "$root/contrib/examples/pytorch-digits/riseml.yml" "$work/digits.yml"
cp "$root/tests/translator/sites/network-roce25.yml" "$work/network.yml"
out=$(run estimate riseml estimate digits.yml --site network.yml --workload resnet50 --plot estimate.png)
grep -q 'efficiency' <<<"$out" || fail "riseml estimate printed no efficiency:"$'\n'"$out"
[ -s "$work/estimate.png" ] || fail "riseml estimate --plot wrote no estimate.png:"$'\n'"$out"
echo "riseml estimate --plot: installed workload and plot script"

# riseml translate: the repo's example and real RiseML files.
cp "$root/contrib/examples/pytorch-digits/riseml.yml" "$work/digits.yml"
out=$(run translate riseml translate digits.yml)
grep -q '^#SBATCH' <<<"$out" || fail "riseml translate printed no #SBATCH line:"$'\n'"$out"
grep -q -- '--riseml-bind=' <<<"$out" || fail "the translated script has no --riseml-bind:"$'\n'"$out"
examples=$root/tests/data/riseml-examples
for f in docs_horovod.yml examples_census_dist_hyper.yml; do
  cp "$examples/$f" "$work/$f"
  out=$(run "translate $f" riseml translate "$f")
  grep -q '^#SBATCH' <<<"$out" || fail "riseml translate $f printed no #SBATCH line:"$'\n'"$out"
done
echo "translated digits.yml, docs_horovod.yml, examples_census_dist_hyper.yml"

# riseml-launch + the installed Python package (torch from Debian's python3-torch).
cat >"$work/allreduce_check.py" <<'PY'
import os, riseml, _riseml, torch
import riseml.torch as hvd
want = "/usr/lib/python3/dist-packages"
assert riseml.__file__.startswith(want + "/riseml/"), riseml.__file__
assert _riseml.__file__.startswith(want + "/_riseml."), _riseml.__file__
assert "PYTHONPATH" not in os.environ
hvd.init()
total = hvd.allreduce(torch.full((5,), float(hvd.rank() + 1)), op=hvd.Sum)
want_sum = float(hvd.size() * (hvd.size() + 1) // 2)
assert total.tolist() == [want_sum] * 5, total
print(f"rank {hvd.rank()} of {hvd.size()}: allreduce {total.tolist()} from {riseml.__file__}")
hvd.shutdown()
PY
out=$(run "riseml-launch python" riseml-launch -n 2 --timeout 100 -- python3 allreduce_check.py)
[ "$(grep -c 'of 2: allreduce \[3.0, 3.0, 3.0, 3.0, 3.0\] from /usr/lib/python3/dist-packages/riseml/' <<<"$out")" -eq 2 ] ||
  fail "riseml-launch -n 2 python3: want two ranks summing to 3 with the installed riseml:"$'\n'"$out"
echo "riseml-launch -n 2: riseml.torch allreduce from /usr/lib/python3/dist-packages"

# riseml-plan through the installed topology helper.
cp "$root/contrib/slurm/testbed/fake-node-topology.xml" "$work/node.xml"
out=$(run riseml-plan riseml-plan --topology node.xml --tasks 4 --format json)
python3 -c 'import json, sys; plan = json.load(sys.stdin); assert len(plan) == 4 and all(t["gpus"] for t in plan), plan' <<<"$out" ||
  fail "riseml-plan --tasks 4: want 4 tasks with GPUs:"$'\n'"$out"
mv /usr/libexec/riseml/riseml-topology "$work/hidden-helper"
rc=0
out=$(cd "$work" && "${clean[@]}" riseml-plan --topology node.xml --tasks 1 2>&1) || rc=$?
mv "$work/hidden-helper" /usr/libexec/riseml/riseml-topology
if [ $rc -eq 0 ] || ! grep -q '/usr/libexec/riseml/riseml-topology' <<<"$out"; then
  fail "riseml-plan did not use /usr/libexec/riseml/riseml-topology (it ran without it):"$'\n'"$out"
fi
echo "riseml-plan: 4 tasks planned through /usr/libexec/riseml/riseml-topology"

# riseml-bench and riseml-replay (an installed workload) under riseml-launch; the probe.
run riseml-bench riseml-launch -n 2 --timeout 100 -- riseml-bench --sizes 4K,64K --rounds 1 \
  --round-seconds 0.01 --calls 5 >/dev/null
out=$(run riseml-replay riseml-launch -n 2 --timeout 100 -- riseml-replay \
  /usr/share/riseml/workloads/resnet50.workload --steps 1 --warmup 0 --compute-scale 0.01)
grep -q 'replay' <<<"$out" || fail "riseml-replay printed no summary:"$'\n'"$out"
run riseml-pmix-probe riseml-launch -n 2 --timeout 100 -- riseml-pmix-probe >/dev/null
echo "riseml-bench, riseml-replay, riseml-pmix-probe: ran under riseml-launch -n 2"

# --- 4. the Slurm testbed with the installed plugin and tools
if [ "$testbed" = 1 ]; then
  step "testbed with $plugin"
  [ -x "$root/contrib/slurm/testbed/up" ] || fail "no contrib/slurm/testbed/up"
  testbed_started=1
  RISEML_SPANK_PLUGIN=$plugin "$root/contrib/slurm/testbed/up" || fail "testbed up failed"
  grep -q "^optional $plugin " /etc/slurm/plugstack.conf ||
    fail "the testbed's plugstack.conf does not list $plugin:"$'\n'"$(cat /etc/slurm/plugstack.conf)"
  srun --help 2>&1 | grep -q -- --riseml-bind || fail "srun --help has no --riseml-bind: $plugin did not load"
  # A folder every node sees (the nodes share this machine's file system; /tmp is per node).
  job_dir=$build/testbed-job
  rm -rf "$job_dir" && mkdir -p "$job_dir"
  cp "$root"/contrib/examples/pytorch-digits/*.py "$root"/contrib/examples/pytorch-digits/riseml.yml "$job_dir/"
  sed -i 's/--epochs 10/--epochs 3/' "$job_dir/riseml.yml"
  sed -i 's|^    - python3 -c "import riseml.torch, sklearn"|&\n    - python3 -c "import riseml; print(\x27riseml from\x27, riseml.__file__)"|' "$job_dir/riseml.yml"
  printf 'bind: verbose\ncontainers: none\n' >"$job_dir/site.yml"
  job=$(cd "$job_dir" && timeout 30 "${clean[@]}" riseml submit --site site.yml riseml.yml) ||
    fail "riseml submit failed: $job"
  [[ $job =~ ^[0-9]+$ ]] || fail "riseml submit printed '$job', not a job id"
  for _ in $(seq 1 300); do
    [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
    sleep 1
  done
  if [ -n "$(squeue -h -j "$job" 2>/dev/null)" ]; then
    scancel "$job" || true
    fail "job $job still queued or running after 300 s"
  fi
  log=$job_dir/riseml-pytorch-digits-$job.out
  state=$(scontrol show job "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -1)
  [ "$state" = COMPLETED ] || fail "job $job ended $state:"$'\n'"$(cat "$log" 2>/dev/null)"
  grep -q 'riseml from /usr/lib/python3/dist-packages/riseml/__init__.py' "$log" ||
    fail "the job did not import the installed riseml:"$'\n'"$(cat "$log")"
  [ "$(grep -Ec '^([0-9]+: )?riseml-bind: ' "$log")" -ge 4 ] || fail "want the installed plugin's plan for 4 tasks in $log"
  grep -Eq '^([0-9]+: )?epoch 3: ' "$log" || fail "no 'epoch 3' line in $log:"$'\n'"$(cat "$log")"
  echo "testbed: job $job (riseml submit, /usr/bin/riseml) COMPLETED on 2 nodes x 2 tasks bound by $plugin"
  "$root/contrib/slurm/testbed/down" || fail "testbed down failed"
  testbed_started=0
fi

# --- 5. remove, purge, and nothing left
step "dpkg -r, dpkg -P"
dpkg -r python3-riseml riseml-spank riseml >"$work/dpkg-r.log" 2>&1 ||
  fail "dpkg -r failed:"$'\n'"$(cat "$work/dpkg-r.log")"
for f in /usr/bin/riseml "$plugin" /usr/lib/python3/dist-packages/riseml /usr/libexec/riseml; do
  [ ! -e "$f" ] || fail "$f is still there after dpkg -r"
done
dpkg -P "${packages[@]}" >"$work/dpkg-p.log" 2>&1 || fail "dpkg -P failed:"$'\n'"$(cat "$work/dpkg-p.log")"
installed=0
for p in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -qv 'not-installed'; then
    fail "$p still known to dpkg after dpkg -P: $(dpkg-query -W -f='${Status}' "$p")"
  fi
done
snapshot >"$work/after"
cat "$work"/*.files | sort -u >"$work/ours"
# Ours: what the packages list, and anything named riseml (but the testbed's /etc/slurm files).
comm -3 "$work/before" "$work/after" | sed 's/^\t//' >"$work/changed"
left=$( (grep -Fxf "$work/ours" "$work/changed" || true; grep -i riseml "$work/changed" | grep -v '^/etc/slurm/' || true) | sort -u)
[ -z "$left" ] || fail "/usr and /etc differ from before the install:"$'\n'"$left"
others=$(wc -l <"$work/changed")
echo "removed cleanly: /usr and /etc hold the files they held before ($others other change(s) meanwhile, none of ours)"
echo "ok deb_install_test: ${packages[*]} built, lintian-clean, installed, run, removed"
