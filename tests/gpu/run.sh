#!/usr/bin/env bash
# The GPU check, in two steps, for a GPU machine that has none of our build dependencies (the
# H200 of issue 35: CUDA 13, NCCL only in Python's nvidia packages, Python + torch + pybind11 +
# pytest, g++; no PMIx, GoogleTest, yaml-cpp, OpenSSL headers, maybe no cmake; nothing can be
# installed there). See docs/gpu.md.
#
#   bash tests/gpu/run.sh pack      HERE, on the build machine (nvcc, NCCL headers, PMIx, GTest):
#       builds with -DRISEML_CUDA=ON -DRISEML_CUDA_ARCHITECTURES=90 in build-gpu-pack and fills
#       .gpu/ (ignored by git) in the repository root: bin/ (the CUDA tests, riseml-launch, the
#       launch check, riseml-plan, riseml-topology, riseml-gpu-bench), lib/ (the shared libraries
#       they need), pmix2/ (libpmix and its plugins), hwloc/, static/ and src/ (to compile the
#       Python module _riseml there against its own Python, pybind11 and torch), and with
#       HOROVOD_TESTS=DIR (a Horovod checkout, or its bare git repository) a copy of Horovod's
#       test/parallel/test_torch.py with what it imports and a generated horovod.torch shim.
#   bash tests/gpu/run.sh device    THERE, from the repository root holding .gpu (about 7 min,
#       bounded by RISEML_GPU_BUDGET_S, default 420 s): nvidia-smi facts, riseml_cuda_tests, the
#       riseml-launch checks, riseml-plan, riseml-gpu-bench, _riseml compiled there,
#       tests/python/test_torch_api.py under riseml-launch, tests/gpu/torch_gpu_check.py and
#       Horovod's test_torch.py on CUDA, and tests/gpu/torch_backend_cuda_check.py (the riseml
#       torch.distributed backend against nccl) with a _riseml_c10d compiled there against its
#       torch (or RISEML_GPU_C10D_PATH=a folder holding one). Writes everything under $OUT (default
#       /tmp/riseml-gpu-out), summary.txt last, and prints the summary.
#       Exit: 0 all passed, 1 something failed, 2 no .gpu, 3 no usable GPU here.
#
# Pack environment: RISEML_GPU_PACK_BUILD (build-gpu-pack), RISEML_GPU_JOBS (nproc),
# RISEML_GPU_ARCH (90), HOROVOD_TESTS. Device environment: OUT, RISEML_GPU_BUDGET_S (420),
# RISEML_GPU_PYTHON (python3, or /usr/bin/python3 when that one has torch and python3 not); for a
# dry run without a GPU: RISEML_GPU_HVD_ANYWAY=1 runs Horovod's tests all the same, and
# RISEML_GPU_HVD_FILTER=REGEX keeps the test ids that match.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
G=$root/.gpu

usage() {
  sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
}

# ---------------------------------------------------------------------------------------------
# The file name of the CUDA runtime in $CUDART_DIR (libcudart.so.12, .13, ...), for -l:NAME.
cudart_name() {
  basename "$(ls "${CUDART_DIR:-/nonexistent}"/libcudart.so.1[0-9] 2>/dev/null | head -1)"
}

# _riseml_c10d (the torch.distributed backend, torch_distributed/) compiled on the GPU machine
# against its Python's torch (the build machine's torch differs, and a c10d backend must match
# the torch it runs in): the backend's sources with that torch's headers, linked with the static
# libraries of the layers under it. Uses SRC, G, PY, C10D, CUDA_INC, NCCL_DIR, CUDART_DIR; writes
# $C10D/_riseml_c10d<ext>. One g++ per source at once (about a minute on 16 cores).
build_c10d() {
  local facts tinc tlib abi major minor cuda
  facts=$("$PY" -c 'import os, torch
from torch.utils import cpp_extension
v = torch.__version__.split("+")[0].split(".")
print(":".join(cpp_extension.include_paths()), os.path.join(os.path.dirname(torch.__file__), "lib"),
      int(torch._C._GLIBCXX_USE_CXX11_ABI), v[0], v[1], int(torch.version.cuda is not None))' \
    2>/dev/null) || { echo "c10d: no torch for $PY"; return 1; }
  read -r tinc tlib abi major minor cuda <<<"$facts"
  [ "$abi" = 1 ] || { echo "c10d: torch built with the old C++ ABI; riseml's libraries use the C++11 one"; return 1; }
  { [ "$major" -ge 2 ] && [ "$cuda" = 1 ]; } || { echo "c10d: needs a CUDA torch 2 (torch $major.$minor, cuda $cuda)"; return 1; }
  local pyinc ext
  pyinc=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  ext=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  local flags=(-O2 -fPIC -std=c++20 -DNDEBUG -DRISEML_HAVE_CUDA=1 -DRISEML_TORCH_GPU=1
    -DRISEML_TORCH_MAJOR="$major" -DRISEML_TORCH_MINOR="$minor" -D_GLIBCXX_USE_CXX11_ABI=1
    -I"$SRC/torch_distributed/include" -I"$SRC/torch_distributed/src" -I"$SRC/allreduce/include"
    -I"$SRC/pmix_bootstrap/include" -I"$SRC/allreduce/cuda/include" -isystem "$pyinc")
  local d incs
  IFS=: read -ra incs <<<"$tinc"
  for d in "${incs[@]}"; do flags+=(-isystem "$d"); done
  [ -n "${CUDA_INC:-}" ] && flags+=(-isystem "$CUDA_INC")
  rm -rf "$C10D"
  mkdir -p "$C10D/obj"
  local s pids=() rc=0 t0
  t0=$(date +%s)
  for s in "$SRC"/torch_distributed/src/*.cpp "$SRC/python/src/c10d_module.cpp"; do
    nice -n 19 g++ "${flags[@]}" -c "$s" -o "$C10D/obj/$(basename "$s" .cpp).o" &
    pids+=($!)
  done
  for s in "${pids[@]}"; do wait "$s" || rc=1; done
  [ $rc = 0 ] || { echo "c10d: compiling failed"; return 1; }
  local cudart
  cudart=$(cudart_name)
  g++ -shared -o "$C10D/_riseml_c10d$ext" "$C10D"/obj/*.o \
    -Wl,--start-group "$G"/static/*.a -Wl,--end-group \
    -L"$tlib" -ltorch_python -ltorch_cuda -lc10_cuda -ltorch -ltorch_cpu -lc10 \
    ${CUDART_DIR:+-L"$CUDART_DIR"} ${cudart:+-l:"$cudart"} ${NCCL_DIR:+-L"$NCCL_DIR"} -l:libnccl.so.2 \
    -L"$G/pmix2/lib" -l:libpmix.so.2 -l:libcrypto.so.3 -lrt -lpthread \
    -Wl,-rpath,"${NCCL_DIR:+$NCCL_DIR:}${CUDART_DIR:+$CUDART_DIR:}$tlib:$G/lib:$G/pmix2/lib" ||
    { echo "c10d: linking failed"; return 1; }
  rm -rf "$C10D/obj"
  # A shared module links with symbols missing (a stale static library): only loading it tells.
  local loaded
  loaded=$(PYTHONPATH=$C10D "$PY" -c 'import torch, _riseml_c10d' 2>&1) ||
    { echo "c10d: the module does not load: $(echo "$loaded" | tail -1)"; return 1; }
  echo "c10d: built for torch $major.$minor in $(($(date +%s) - t0)) s"
}

# ---------------------------------------------------------------------------------------------
pack() {
  set -e
  local build=${RISEML_GPU_PACK_BUILD:-$root/build-gpu-pack}
  local jobs=${RISEML_GPU_JOBS:-$(nproc)}
  local nvcc=/usr/local/cuda/bin/nvcc
  command -v nvcc >/dev/null && nvcc=$(command -v nvcc)
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  [ -f "$build/CMakeCache.txt" ] && gen=()  # keep the generator it was made with
  echo "pack: configure $build"
  mkdir -p "$build"
  cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CUDA_COMPILER="$nvcc" -DRISEML_CUDA=ON \
    -DRISEML_CUDA_ARCHITECTURES="${RISEML_GPU_ARCH:-90}" -DRISEML_TESTS=ON -DRISEML_WERROR=ON \
    "-DRISEML_COMPONENTS=engine;tools;pmix_bootstrap;runtime;spank_plugin" >"$build/riseml-pack-configure.log" 2>&1 ||
    { tail -30 "$build/riseml-pack-configure.log"; exit 1; }
  grep "riseml: GPU support" "$build/riseml-pack-configure.log" || true
  local bins=(riseml_cuda_tests riseml-gpu-bench riseml-launch riseml_gpu_launch_check riseml-plan
    riseml-topology)
  echo "pack: build ${bins[*]} riseml_runtime (-j$jobs)"
  cmake --build "$build" -j "$jobs" --target "${bins[@]}" riseml_runtime

  rm -rf "$G"
  mkdir -p "$G"/{bin,lib,static,src,hwloc,pmix2/lib,horovod}
  local b f
  for b in "${bins[@]}"; do
    f=$(find "$build" -type f -perm -u+x -name "$b" | head -1)
    [ -n "$f" ] || { echo "pack: $b not built"; exit 1; }
    cp "$f" "$G/bin/"
  done
  strip "$G"/bin/*
  # Static libraries for _riseml (the runtime and every layer below it), without debug info.
  find "$build" -name 'libriseml_*.a' ! -name 'libriseml_launch_core.a' -exec cp {} "$G/static/" \;
  strip --strip-debug "$G"/static/*.a

  # PMIx as Debian installs it (its plugins are looked for under the compiled-in prefix; the
  # device step puts pmix2 there when it may, and also names the plugin folder).
  local X=/usr/lib/x86_64-linux-gnu/pmix2
  cp -L "$X/lib/libpmix.so.2" "$G/pmix2/lib/"
  ln -sf libpmix.so.2 "$G/pmix2/lib/libpmix.so"
  cp -r "$X/lib/pmix" "$G/pmix2/lib/"
  [ -d "$X/share" ] && cp -r "$X/share" "$G/pmix2/"
  local hw
  hw=$(find /usr/lib/x86_64-linux-gnu/hwloc -name 'hwloc_pci.so' 2>/dev/null | head -1)
  [ -n "$hw" ] && cp "$hw" "$G/hwloc/"
  # The shared libraries all of them need, but what every Linux has, what the GPU machine has
  # its own of (CUDA, NCCL, libcrypto: Python's own ssl uses it) and libpmix (above).
  local skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libstdc\+\+|libgcc_s|libpthread|libdl\.|librt\.|libz\.so|libcuda|libcudart|libnccl|libcrypto|libssl|libpmix)'
  local lib path
  for f in "$G"/bin/* "$G"/pmix2/lib/libpmix.so.2 "$G"/pmix2/lib/pmix/*.so "$G"/hwloc/*.so; do
    [ -f "$f" ] || continue
    ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
      while read -r lib path; do
        [[ $lib =~ $skip ]] || [ -e "$G/lib/$lib" ] || cp -L "$path" "$G/lib/$lib"
      done
  done
  # Sources for _riseml (python/src/module.cpp and the headers it reaches), the Python packages
  # and the Python tests the device step runs.
  (cd "$root" && tar cf - python/src python/riseml allreduce/include allreduce/cuda/include \
    engine/include pmix_bootstrap/include runtime/include common/include elastic/include \
    torch_distributed/include torch_distributed/src \
    tests/python tests/gpu/torch_gpu_check.py tests/gpu/same_loss_check.py \
    tests/gpu/torch_backend_cuda_check.py \
    contrib/examples/pytorch-digits 2>/dev/null) | tar xf - -C "$G/src"
  [ -f "$G/src/python/src/module.cpp" ] || { echo "pack: python/src/module.cpp missing"; exit 1; }
  (cd "$root" && git rev-parse --short HEAD 2>/dev/null) >"$G/commit.txt" || echo unknown >"$G/commit.txt"
  git -C "$root" status --porcelain 2>/dev/null | wc -l | sed 's/$/ changed file(s) in the tree/' >>"$G/commit.txt"

  [ -n "${HOROVOD_TESTS:-}" ] && pack_horovod "$HOROVOD_TESTS"
  echo "pack: .gpu from $(head -1 "$G/commit.txt"): $(du -sh "$G" | cut -f1)"
  du -sh "$G"/* | sed 's/^/pack:   /'
  echo "pack: next, on the GPU machine from the repository root: bash tests/gpu/run.sh device"
  echo "pack: (the device tool must carry .gpu: it is ignored by git)"
}

# Horovod's test_torch.py and what it imports, copied (never committed), and a horovod.torch shim
# that re-exports riseml.torch, generated here.
pack_horovod() {
  local src=$1 H=$G/horovod
  local files=(test/parallel/test_torch.py test/utils/common.py horovod/runner/util/threads.py)
  mkdir -p "$H/test/parallel" "$H/test/utils" "$H/shim/horovod/torch" "$H/shim/horovod/runner/util"
  local f
  for f in "${files[@]}"; do
    mkdir -p "$(dirname "$H/$f")"
    if [ -f "$src/$f" ]; then
      cp "$src/$f" "$H/$f.tmp"
    elif git -C "$src" cat-file -e "HEAD:$f" 2>/dev/null; then
      git -C "$src" show "HEAD:$f" >"$H/$f.tmp"
    else
      echo "pack: HOROVOD_TESTS=$src has no $f (a Horovod checkout or its git repository)"
      exit 1
    fi
  done
  mv "$H/test/parallel/test_torch.py.tmp" "$H/test/parallel/test_torch.py"
  mv "$H/test/utils/common.py.tmp" "$H/test/utils/common.py"
  mv "$H/horovod/runner/util/threads.py.tmp" "$H/shim/horovod/runner/util/threads.py"
  rm -rf "$H/horovod"
  : >"$H/shim/horovod/__init__.py"
  : >"$H/shim/horovod/runner/__init__.py"
  : >"$H/shim/horovod/runner/util/__init__.py"
  cat >"$H/shim/horovod/torch/__init__.py" <<'EOF'
# Generated by tests/gpu/run.sh pack: Horovod's tests import horovod.torch; this is riseml.torch.
from riseml.torch import *  # noqa: F401,F403
from riseml.torch import RisemlError as HorovodInternalError  # noqa: F401
from riseml.torch import elastic  # noqa: F401
EOF
  (git -C "$src" rev-parse --short HEAD 2>/dev/null || echo "a copy") >"$H/source.txt"
  echo "pack: Horovod's test_torch.py ($(grep -c '    def test_' "$H/test/parallel/test_torch.py") tests) from $src"
}

# ---------------------------------------------------------------------------------------------
device() {
  [ -d "$G/bin" ] || {
    echo "run.sh device: no $G/bin: run 'bash tests/gpu/run.sh pack' on the build machine first and bring .gpu along"
    exit 2
  }
  local O=${OUT:-/tmp/riseml-gpu-out}
  mkdir -p "$O"
  O=$(cd "$O" && pwd)
  exec 3>&1 4>&2
  exec > >(tee "$O/log.txt") 2>&1
  local teepid=$!
  local t0 budget deadline
  t0=$(date +%s)
  budget=${RISEML_GPU_BUDGET_S:-420}
  deadline=$((t0 + budget))
  el() { echo "[$(($(date +%s) - t0)) s] $*"; }
  # A part's time limit: its own, or what is left before the deadline less `reserve` seconds.
  limit() {
    local want=$1 reserve=${2:-10} left
    left=$((deadline - $(date +%s) - reserve))
    [ "$left" -lt "$want" ] && want=$left
    [ "$want" -lt 5 ] && want=0
    echo "$want"
  }
  local S="$O/summary.txt" failed=()
  : >"$S"
  sum() { echo "$*" >>"$S"; }

  el "riseml GPU check (device step), .gpu from $(head -1 "$G/commit.txt" 2>/dev/null), budget ${budget} s, output $O"
  # --- facts ---
  local gpu_ok=1 smi
  if ! command -v nvidia-smi >/dev/null; then
    gpu_ok=0
    smi="no nvidia-smi on PATH (no NVIDIA driver here?)"
  elif smi=$(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,compute_mode,persistence_mode \
      --format=csv,noheader 2>&1); then
    nvidia-smi >"$O/nvidia-smi.txt" 2>&1
  else
    gpu_ok=0
    smi="nvidia-smi failed or missing: ${smi:-no output}"
  fi
  sum "gpu: $smi"
  local PY=${RISEML_GPU_PYTHON:-python3}
  if ! "$PY" -c 'import torch' 2>/dev/null && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    PY=/usr/bin/python3
  fi
  local pyfacts
  pyfacts=$("$PY" -c 'import sys
try:
    import torch
    t = f"torch {torch.__version__} (cuda {torch.version.cuda}), cuda available {torch.cuda.is_available()}"
    ok = torch.cuda.is_available()
except Exception as e:
    t, ok = f"no torch ({e})", False
print(f"python {sys.version.split()[0]} ({sys.executable}), {t}")
sys.exit(0 if ok else 1)' 2>&1) || gpu_ok=0
  sum "host: $(nproc) cpus, $(g++ --version 2>/dev/null | head -1), $pyfacts"
  cat "$S"
  if [ $gpu_ok = 0 ]; then
    sum "NO USABLE GPU HERE (nvidia-smi or torch.cuda): the C++ checks below skip; the torch check and Horovod's tests are left out"
    el "NO USABLE GPU HERE: the C++ checks will skip; torch_gpu_check and Horovod's tests are left out"
  fi

  # --- the libraries: ours in .gpu, NCCL and the CUDA runtime from this machine ---
  local X=/usr/lib/x86_64-linux-gnu/pmix2
  if [ ! -e "$X/lib/libpmix.so.2" ] && mkdir -p "$(dirname "$X")" 2>/dev/null && cp -a "$G/pmix2" "$X" 2>/dev/null; then
    el "PMIx put at $X (its plugins' compiled-in place)"
  fi
  export PMIX_MCA_mca_base_component_path=$G/pmix2/lib/pmix
  local site
  site=$("$PY" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)
  findlib() {  # the folder of the first $1 in Python's nvidia packages, CUDA, ldconfig
    local d p
    for d in $site; do
      p=$(find "$d/nvidia" -name "$1" 2>/dev/null | head -1)
      [ -n "$p" ] && { dirname "$p"; return; }
    done
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
      compgen -G "$d/$1" >/dev/null && { echo "$d"; return; }
    done
    p=$(ldconfig -p 2>/dev/null | awk -v l="^${1//\*/.*}$" '$1 ~ l {print $NF; exit}')
    [ -n "$p" ] && dirname "$p"
  }
  local NCCL_DIR CUDART_DIR CUDA_INC
  NCCL_DIR=$(findlib libnccl.so.2)
  CUDART_DIR=$(findlib 'libcudart.so.1[0-9]')
  # shellcheck disable=SC2046  # one folder per site-packages entry
  CUDA_INC=$(find /usr/local/cuda/include /usr/local/cuda*/targets/x86_64-linux/include \
    $(for d in $site; do echo "$d/nvidia"; done) -name cuda_runtime.h 2>/dev/null | head -1)
  [ -n "$CUDA_INC" ] && CUDA_INC=$(dirname "$CUDA_INC")
  sum "libraries: nccl ${NCCL_DIR:-NOT FOUND}, cudart ${CUDART_DIR:-NOT FOUND}, cuda_runtime.h ${CUDA_INC:-NOT FOUND}"
  export LD_LIBRARY_PATH=$G/lib:$G/pmix2/lib${NCCL_DIR:+:$NCCL_DIR}${CUDART_DIR:+:$CUDART_DIR}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export HWLOC_PLUGINS_PATH=$G/hwloc
  local b missing
  for b in "$G"/bin/*; do
    missing=$(ldd "$b" 2>&1 | grep "not found" | awk '{print $1}' | tr '\n' ' ')
    [ -n "$missing" ] && sum "MISSING for $(basename "$b"): $missing"
  done
  tail -n +3 "$S"

  local L=$G/bin/riseml-launch C=$G/bin/riseml_gpu_launch_check SRC=$G/src PYMOD=$G/pymod
  local EXT
  EXT=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)

  # _riseml compiled here against this Python, pybind11 and CUDA runtime, linked with the static
  # libraries built on the build machine (about 15 s).
  build_module() {
    local pyinc pbinc
    pyinc=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    pbinc=$("$PY" -c 'import pybind11; print(pybind11.get_include())' 2>/dev/null)
    # Debian's pybind11-dev has no Python package, only /usr/include/pybind11 (searched anyway).
    [ -z "$pbinc" ] && [ ! -d /usr/include/pybind11 ] && { echo "no pybind11 for $PY"; return 1; }
    rm -rf "$PYMOD"; mkdir -p "$PYMOD"
    local s
    s=$(date +%s)
    timeout "$(limit 150)" g++ -O2 -fPIC -shared -std=c++20 -DNDEBUG -DRISEML_HAVE_CUDA=1 \
      -I"$SRC/allreduce/cuda/include" -I"$SRC/allreduce/include" -I"$SRC/engine/include" \
      -I"$SRC/pmix_bootstrap/include" -I"$SRC/runtime/include" -I"$SRC/common/include" \
      -I"$SRC/elastic/include" -isystem "$pyinc" ${pbinc:+-isystem "$pbinc"} ${CUDA_INC:+-isystem "$CUDA_INC"} \
      "$SRC/python/src/module.cpp" -o "$PYMOD/_riseml$EXT" \
      -Wl,--start-group "$G"/static/*.a -Wl,--end-group \
      ${CUDART_DIR:+-L"$CUDART_DIR"} -l:"$(cudart_name)" \
      ${NCCL_DIR:+-L"$NCCL_DIR"} -l:libnccl.so.2 -L"$G/pmix2/lib" -l:libpmix.so.2 -l:libcrypto.so.3 \
      -lrt -lpthread -Wl,-rpath,"$G/lib:$G/pmix2/lib"
    local rc=$?
    echo "module build rc=$rc in $(($(date +%s) - s)) s"
    return $rc
  }
  local hvd_ok=0
  [ -f "$G/horovod/test/parallel/test_torch.py" ] && hvd_ok=1
  horovod_tests() {
    local H=$G/horovod shim=$O/.hvd-shim J=$O/.hvd
    rm -rf "$shim" "$J"; mkdir -p "$shim" "$J"
    # Stand-ins, made here, for modules Horovod's test helpers import that this Python may lack.
    "$PY" -c 'import mock' 2>/dev/null || echo 'from unittest.mock import *  # noqa' >"$shim/mock.py"
    "$PY" -c 'import cloudpickle' 2>/dev/null || echo 'from pickle import *  # noqa' >"$shim/cloudpickle.py"
    "$PY" -c 'import pytest' 2>/dev/null || { echo "horovod: no pytest for $PY: Horovod's tests left out" >"$O/hvd_summary.txt"; return; }
    local tmo=()
    "$PY" -c 'import pytest_timeout' 2>/dev/null && tmo=(--timeout 50)
    export PYTHONPATH=$H/shim:$shim:$PYMOD:$SRC/python
    cd "$H/test/parallel" || return
    timeout 60 "$PY" -m pytest --collect-only -q -p no:cacheprovider test_torch.py 2>/dev/null | grep '::' |
      grep -E "${RISEML_GPU_HVD_FILTER:-.}" >"$J/ids.txt"
    local which=(test_torch.py)
    [ -n "${RISEML_GPU_HVD_FILTER:-}" ] && mapfile -t which <"$J/ids.txt"
    # Tests not started 80 s before the deadline (and step 7's reserve) are counted as not run.
    local stop_at=$((deadline - 80 - step7_reserve))
    export L PY J stop_at
    export TMO="${tmo[*]}"
    # One process per test, 8 at a time, so that one failing test cannot hide the others ...
    xargs -P 8 -I{} sh -c 'n=$(echo "{}" | sed "s/.*:://"); if [ "$(date +%s)" -ge "$stop_at" ]; then echo "not run: out of time" >"$J/$n.log"; exit 0; fi
      timeout 70 "$L" -n 1 --timeout 65 -- "$PY" -m pytest -q -p no:cacheprovider $TMO -o junit_family=xunit1 --junitxml="$J/$n.xml" "{}" >"$J/$n.log" 2>&1' <"$J/ids.txt" &
    local per=$!
    # ... and at the same time the whole file in one process, as Horovod's CI runs it.
    local t
    t=$(limit 300 $((8 + step7_reserve)))
    timeout "$t" "$L" -n 1 --timeout $((t - 3)) -- "$PY" -m pytest -q -p no:cacheprovider $TMO -rfE "${which[@]}" \
      >"$O/hvd_whole.txt" 2>&1 &
    local whole=$!
    wait $per
    wait $whole
    local wrc=$?
    echo "rc=$wrc$([ $wrc = 124 ] && echo ": cut at the time limit, $t s")" >>"$O/hvd_whole.txt"
    "$PY" - "$J" "$O/hvd_failures.txt" <<'PY' >"$O/hvd_summary.txt"
import collections, os, sys, xml.etree.ElementTree as ET
j, failures_file = sys.argv[1], sys.argv[2]
ids = [l.strip() for l in open(os.path.join(j, "ids.txt")) if "::" in l]
res = collections.Counter(); msgs = collections.defaultdict(list); failed = []
with open(failures_file, "w") as out:
    for i in ids:
        n = i.split("::")[-1]
        log = os.path.join(j, n + ".log")
        text = open(log, errors="replace").read() if os.path.exists(log) else ""
        if text.startswith("not run"):
            res["not run (out of time)"] += 1
            continue
        try:
            tc = next(ET.parse(os.path.join(j, n + ".xml")).getroot().iter("testcase"))
        except Exception:
            res["failed"] += 1
            failed.append(n)
            msgs[("failed", "no result (crash or timeout)")].append(n)
            out.write(f"===== {n} (no result)\n" + "\n".join(text.splitlines()[-30:]) + "\n")
            continue
        v = "passed"
        for tag in ("failure", "error", "skipped"):
            e = tc.find(tag)
            if e is not None:
                v = "skipped" if tag == "skipped" else "failed"
                m = (e.get("message") or e.text or "").strip().splitlines()
                msgs[(v, (m[0] if m else "")[:160])].append(n)
                if v == "failed":
                    failed.append(n)
                    out.write(f"===== {n}\n" + "\n".join(text.splitlines()[-40:]) + "\n")
                break
        res[v] += 1
print(f"horovod test_torch.py on CUDA, one process per test ({len(ids)} tests): "
      + ", ".join(f"{k} {v}" for k, v in sorted(res.items())))
print("  failing:", " ".join(failed) if failed else "none")
for (v, m), names in sorted(msgs.items(), key=lambda kv: -len(kv[1]))[:25]:
    print(f"  {len(names):3d} {v}: {m} [{' '.join(names[:6])}{' ...' if len(names) > 6 else ''}]")
PY
    {
      echo "horovod test_torch.py on CUDA, whole file in one process: $(grep -E '(passed|failed|error|skipped).* in [0-9.]+s' "$O/hvd_whole.txt" | tail -1 | tr -d '='), $(tail -1 "$O/hvd_whole.txt")"
      echo "  failing: $(grep -E '^(FAILED|ERROR) ' "$O/hvd_whole.txt" | awk '{print $2}' | sed 's/.*:://' | sort -u | tr '\n' ' ')"
    } >>"$O/hvd_summary.txt"
  }

  # --- _riseml for this Python, in the background while the C++ checks run ---
  el "start: _riseml build in the background"
  build_module >"$O/module_build.txt" 2>&1 &
  local modjob=$!

  # --- C++ checks ---
  el "1. riseml_cuda_tests"
  timeout "$(limit 150 240)" "$G/bin/riseml_cuda_tests" --gtest_output=xml:"$O/cuda_tests.xml" >"$O/cuda_tests.txt" 2>&1
  local rc=$?
  local passed nfail nskip
  passed=$(grep -cE '^\[       OK \]' "$O/cuda_tests.txt")
  nfail=$(grep -E '^\[  FAILED  \] [A-Za-z]' "$O/cuda_tests.txt" | awk '{print $4}' | sort -u)
  nskip=$(grep -cE '^\[  SKIPPED \] [A-Za-z]' "$O/cuda_tests.txt")
  sum "riseml_cuda_tests: rc $rc, $passed passed, $(echo -n "$nfail" | grep -c .) failed, $nskip skipped${nfail:+; failed: $(echo $nfail)}"
  grep -A1 -E ': Skipped$' "$O/cuda_tests.txt" | grep -vE ': Skipped$|^--$' | sort | uniq -c | sort -rn | head -6 |
    sed 's/^ */  skipped: /' >>"$S"
  [ $rc -eq 0 ] || failed+=("riseml_cuda_tests (rc $rc)")
  grep -E 'Failure$|error: ' "$O/cuda_tests.txt" -A2 | head -12 | sed 's/^/  | /' >>"$S"
  tail -n 3 "$S"

  el "2. riseml-launch checks"
  launch() {  # name, accepted exit codes, command...
    local name=$1 ok=$2; shift 2
    timeout "$(limit 60 220)" "$@" >"$O/launch_$name.txt" 2>&1
    local rc=$?
    cat "$O/launch_$name.txt" >>"$O/launch.txt"
    sum "launch $name: rc $rc$([ $rc = 77 ] && echo " (skip)")$(grep -E 'rank [0-9]+ of [0-9]+ \(|skip:|WRONG|error|failed' "$O/launch_$name.txt" | head -3 | sed 's/^/ | /' | tr -d '\n')"
    [[ " $ok " == *" $rc "* ]] || failed+=("launch $name (rc $rc)")
  }
  launch flat_1_rank "0" "$L" -n 1 --tag-output --timeout 50 -- "$C"
  launch flat_2_ranks "0 77" "$L" -n 2 --tag-output --timeout 50 -- "$C"
  launch hierarchical_2_fake_hosts "0" env RISEML_GPU_ALGORITHM=hierarchical "$L" -n 2 --tag-output --timeout 50 -- "$C" --fake-hosts
  # Which PMIx store the clients use (ds21: shared memory; hash: peers' data stays with the server).
  PMIX_MCA_gds_base_verbose=10 timeout 30 "$L" -n 1 --timeout 25 -- "$C" >"$O/launch_pmix_gds.txt" 2>&1
  sum "pmix gds in the clients: $(grep -oE 'GDS STORE JOB INFO WITH [a-z0-9]+' "$O/launch_pmix_gds.txt" | sort -u | head -2 | tr '\n' ' ')"
  tail -n 4 "$S"

  el "3. riseml-plan"
  {
    timeout 30 "$G/bin/riseml-plan" --tasks 1 --format table
    echo "rc=$?"
    timeout 30 "$G/bin/riseml-plan" --tasks 2 --format table
    echo "rc=$?"
  } >"$O/plan.txt" 2>&1
  sum "riseml-plan: $(grep -c '^rc=0' "$O/plan.txt") of 2 ran (plan.txt)"
  head -20 "$O/plan.txt"

  # --- the timed parts, alone on the GPU ---
  el "4. riseml-gpu-bench"
  local t
  t=$(limit 120 120)
  if [ "$t" -gt 0 ]; then
    timeout "$t" "$G/bin/riseml-gpu-bench" >"$O/bench.txt" 2>&1
    rc=$?
    sum "riseml-gpu-bench: rc $rc$([ $rc = 124 ] && echo " (cut at $t s)")"
    sed 's/^/  /' "$O/bench.txt" >>"$S"
    [ $rc -eq 0 ] || failed+=("riseml-gpu-bench (rc $rc)")
  else
    sum "riseml-gpu-bench: not run, out of time"
  fi
  cat "$O/bench.txt" 2>/dev/null

  el "waiting for the _riseml build (pid $modjob)"
  wait $modjob
  sum "module _riseml: $(grep 'module build rc' "$O/module_build.txt" || tail -1 "$O/module_build.txt")"
  local have_mod=0
  [ -f "$PYMOD/_riseml$EXT" ] && have_mod=1
  [ $have_mod = 1 ] || { failed+=("_riseml build"); tail -15 "$O/module_build.txt" | sed 's/^/  | /' >>"$S"; }

  el "5. torch_gpu_check"
  t=$(limit 150 60)
  if [ $gpu_ok = 1 ] && [ $have_mod = 1 ] && [ "$t" -gt 0 ]; then
    PYTHONPATH=$PYMOD:$SRC/python timeout "$t" "$L" -n 1 --tag-output --timeout $((t - 5)) -- \
      "$PY" "$SRC/tests/gpu/torch_gpu_check.py" >"$O/torch_check.txt" 2>&1
    rc=$?
    sum "torch_gpu_check: rc $rc$([ $rc = 124 ] && echo " (cut at $t s)")"
    grep -E 'torch_gpu_check: ' "$O/torch_check.txt" | sed 's/^\[[0-9]*\] //; s/^/  /' >>"$S"
    [ $rc -eq 0 ] || { failed+=("torch_gpu_check (rc $rc)"); tail -15 "$O/torch_check.txt" | sed 's/^/  | /' >>"$S"; }
    grep 'torch_gpu_check: ' "$O/torch_check.txt"
  else
    sum "torch_gpu_check: not run ($([ $gpu_ok = 0 ] && echo "no GPU" || echo "no module or out of time"))"
  fi

  el "5b. same_loss_check: 2 and 4 ranks (fake hosts, hierarchical) train to one process's loss curve"
  t=$(limit 90 60)
  if [ $gpu_ok = 1 ] && [ $have_mod = 1 ] && [ "$t" -gt 0 ]; then
    PYTHONPATH=$PYMOD:$SRC/python timeout "$t" "$PY" "$SRC/tests/gpu/same_loss_check.py" "$L" 2 4 \
      >"$O/same_loss.txt" 2>&1
    rc=$?
    sum "same_loss_check: rc $rc$([ $rc = 124 ] && echo " (cut at $t s)")"
    grep -E '^same_loss: ' "$O/same_loss.txt" | sed 's/^/  /' >>"$S"
    [ $rc -eq 0 ] || { failed+=("same_loss_check (rc $rc)"); tail -15 "$O/same_loss.txt" | sed 's/^/  | /' >>"$S"; }
  else
    sum "same_loss_check: not run"
  fi

  # _riseml_c10d for step 7, compiled against this Python's torch while step 6 runs (nothing
  # timed there; the benchmarks and the ResNet-50 steps above are done).
  # Step 7 (the check at one rank and its device_id launch: not yet timed on a GPU; 140 s kept)
  # keeps its time from Horovod's tests, which run to the deadline.
  local C10D=$G/c10dmod c10djob="" step7_reserve=0
  [ $gpu_ok = 1 ] && step7_reserve=140
  if [ -z "${RISEML_GPU_C10D_PATH:-}" ] && [ $gpu_ok = 1 ]; then
    el "start: _riseml_c10d build in the background"
    build_c10d >"$O/c10d_build.txt" 2>&1 &
    c10djob=$!
  fi

  el "6. test_torch_api.py, and Horovod's test_torch.py (per test, 8 at a time, and whole) until the deadline"
  if [ $have_mod = 1 ]; then
    PYTHONPATH=$PYMOD:$SRC/python timeout "$(limit 120 15)" "$L" -n 1 --tag-output --timeout 115 -- \
      "$PY" "$SRC/tests/python/test_torch_api.py" >"$O/torch_api.txt" 2>&1 &
    local apijob=$! hvdjob=""
    if { [ $gpu_ok = 1 ] || [ "${RISEML_GPU_HVD_ANYWAY:-0}" = 1 ]; } && [ $hvd_ok = 1 ]; then
      (horovod_tests) &
      hvdjob=$!
    elif [ $hvd_ok = 0 ]; then
      echo "horovod: no .gpu/horovod (pack with HOROVOD_TESTS=DIR): Horovod's tests left out" >"$O/hvd_summary.txt"
    else
      echo "horovod: no GPU: Horovod's tests left out" >"$O/hvd_summary.txt"
    fi
    wait $apijob
    rc=$?
    sum "test_torch_api.py (1 rank): rc $rc; $(grep -iE 'cuda|passed|failed|ok' "$O/torch_api.txt" | tail -3 | tr '\n' ' ')"
    [ $rc -eq 0 ] || failed+=("test_torch_api (rc $rc)")
    [ -n "$hvdjob" ] && wait $hvdjob
  else
    echo "horovod: no _riseml: Horovod's tests left out" >"$O/hvd_summary.txt"
  fi
  cat "$O/hvd_summary.txt" >>"$S"
  grep -q "failing:.*test_" "$O/hvd_summary.txt" && failed+=("Horovod's test_torch.py")

  # The torch.distributed backend on CUDA tensors against nccl (torch_backend_cuda_check.py), with
  # the _riseml_c10d compiled above (or RISEML_GPU_C10D_PATH=a folder holding one).
  el "7. torch_backend_cuda_check (riseml backend vs nccl on CUDA tensors)"
  if [ -n "$c10djob" ]; then
    wait $c10djob || failed+=("_riseml_c10d build (see c10d_build.txt)")
    sum "_riseml_c10d: $(tail -1 "$O/c10d_build.txt")"
  fi
  t=$(limit 300 5)
  local c10d_path=${RISEML_GPU_C10D_PATH:-$C10D}:$PYMOD
  if [ $gpu_ok = 1 ] && [ "$t" -gt 30 ] &&
      PYTHONPATH=$c10d_path:$SRC/python "$PY" -c 'import _riseml_c10d as c, sys; sys.exit(0 if c.cuda_tensors else 1)' 2>/dev/null; then
    PATH=$G/bin:$PATH PYTHONPATH=$c10d_path:$SRC/python timeout "$t" "$PY" \
      "$SRC/tests/gpu/torch_backend_cuda_check.py" --launch "$L" --timeout $((t - 60)) \
      >"$O/torch_backend_cuda.txt" 2>&1
    rc=$?
    sum "torch_backend_cuda_check: rc $rc"
    grep -E 'torch_backend_cuda_check: (.*(FAIL|timing|RESULT|rank\(s\)))' "$O/torch_backend_cuda.txt" |
      sed 's/^\[[0-9]*\] //; s/^/  /' >>"$S"
    [ $rc -eq 0 ] || failed+=("torch_backend_cuda_check (rc $rc)")
  else
    sum "torch_backend_cuda_check: not run (no GPU, out of time, or no _riseml_c10d with cuda_tensors for $PY)"
  fi

  rm -rf "$O/.hvd" "$O/.hvd-shim"
  sum "elapsed $(($(date +%s) - t0)) s of ${budget}"
  if [ $gpu_ok = 0 ]; then
    sum "RESULT: NO USABLE GPU HERE (see the first lines); nothing above says anything about the GPU path"
  elif [ ${#failed[@]} -gt 0 ]; then
    sum "RESULT: FAILED: ${failed[*]}"
  else
    sum "RESULT: all passed"
  fi
  echo
  echo "=================== summary ($S) ==================="
  cat "$S"
  local code=0
  [ ${#failed[@]} -gt 0 ] && code=1
  [ $gpu_ok = 0 ] && code=3
  # Let tee write the last lines before the script ends (its pid, not a bare wait).
  exec 1>&3 2>&4
  wait "$teepid" 2>/dev/null
  exit $code
}

case "${1:-}" in
  pack) pack ;;
  device) device ;;
  -h | --help | help) usage ;;
  *)
    usage
    exit 2
    ;;
esac
