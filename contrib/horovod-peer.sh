#!/usr/bin/env bash
# Installs the real Horovod 0.28.1 (PyTorch + its Gloo controller, no MPI, no TensorFlow/MXNet)
# into an existing venv, as the peer that riseml.torch is compared with and tested beside:
#   contrib/horovod-peer.sh VENV CACHE_DIR
# VENV is made by another script (contrib/python-venv.sh) and holds the torch the project pins,
# 2.15.0 (cxx11 ABI, from PyPI). Horovod is built from its PyPI source against that torch; the
# wheel is kept in CACHE_DIR, keyed by the torch version, the Python and whether CUDA was seen,
# so a second install costs seconds. Idempotent: a venv that already has Horovod 0.28.1 built
# for its torch is left alone.
#
# Why torch 2.15.0 and how: Horovod 0.28.1 builds unpatched with torch 2.15.0, and its
# test/parallel/test_torch.py passes there except 3 tests that trip over torch 2.15's Muon
# optimizer (docs/python.md); no older torch is needed. The only obstacle is the C++ standard:
# torch 2.15's headers require C++20 (torch/all.h: "#error C++20 or later compatible compiler is
# required"), while Horovod's CMakeLists.txt and horovod/torch/CMakeLists.txt set
# CMAKE_CXX_STANDARD 14. CXXFLAGS=-std=c++20 cannot win: Horovod strips every -std= from
# CMAKE_CXX_FLAGS, and CMake puts its own -std=c++14 after the flags anyway. So the build runs
# with CXX set to a two-line wrapper that appends -std=c++20 to every g++ call (the last -std
# wins); Horovod's sources, its vendored gloo included, compile as C++20 with g++ 12 as they are.
#
# What the build sees: HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1
# HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1, no HOROVOD_GPU_OPERATIONS (no NCCL ops),
# MAKEFLAGS=-j$(nproc) (Horovod's setup.py would run make -j8). Where CUDA is installed
# (/usr/local/cuda or nvcc on PATH) and torch is a CUDA wheel, Horovod's CMake adds its CUDA
# parts by itself (HAVE_CUDA, its small kernels built by nvcc for every architecture nvcc knows);
# GPU tensors then go through Gloo on the host. Needs cmake >= 3.13, g++, the venv's
# setuptools, and PyPI once (the sdist, Horovod's few runtime dependencies, and mock and
# pytest-timeout for running Horovod's test/parallel/test_torch.py); all downloads land in
# CACHE_DIR. On 2 cores the build takes 3 to 3.5 minutes (docs/python.md).
set -euo pipefail
version=0.28.1
sdist_sha256=92a43f5a94c43907a56805bad15f19700c62ffc83b7ca483f9e104e229f67ef0
pinned_torch=2.15.0

if [ $# -ne 2 ]; then
  echo "usage: $0 VENV CACHE_DIR" >&2
  exit 2
fi
venv=$1
cache=$2
py=$venv/bin/python
say() { echo "horovod-peer: $*" >&2; }
if [ ! -x "$py" ]; then
  say "no venv at $venv (make it first: contrib/python-venv.sh $venv)"
  exit 1
fi
start=$(date +%s)
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

# Facts about the venv: torch's version, the Python tag, whether Horovod's CMake will see CUDA
# (its own test: torch.version.cuda and torch.utils.cpp_extension.CUDA_HOME both set).
read -r torch_version py_tag cuda_seen < <("$py" - <<'EOF' 2>/dev/null
import logging, sys
logging.disable(logging.WARNING)
import torch
from torch.utils.cpp_extension import CUDA_HOME
cuda = "cuda" if torch.version.cuda is not None and CUDA_HOME is not None else "cpu"
print(torch.__version__, sys.implementation.cache_tag, cuda)
EOF
) || { say "torch does not import in $venv"; exit 1; }
case $torch_version in
  2.*) ;;
  *) say "torch $torch_version in $venv: Horovod's peer is built for torch 2.x ($pinned_torch)"; exit 1 ;;
esac
if [ "${torch_version%%+*}" != "$pinned_torch" ]; then
  say "warning: torch $torch_version, not the pinned $pinned_torch; building for it anyway"
fi

# Already there, built for this torch, with the test helpers? Then nothing to do.
installed=$("$py" - <<'EOF' 2>/dev/null || true
import importlib.metadata as md, json, os, importlib.util as u
spec = u.find_spec("horovod")
meta = json.load(open(os.path.join(os.path.dirname(spec.origin), "metadata.json")))
ok = all(u.find_spec(m) for m in ("mock", "pytest_timeout", "psutil", "cloudpickle"))
print(md.version("horovod"), meta.get("pytorch"), "ok" if ok else "missing")
EOF
)
if [ "$installed" = "$version $torch_version ok" ]; then
  say "Horovod $version for torch $torch_version already in $venv; nothing to do"
  exit 0
fi

wheel_dir=$cache/horovod-$version/torch-$torch_version-$py_tag-$cuda_seen
deps_dir=$cache/deps
mkdir -p "$wheel_dir" "$deps_dir"
wheel=$(find "$wheel_dir" -maxdepth 1 -name "horovod-$version-*.whl" | head -n 1)
if [ -n "$wheel" ]; then
  say "reusing $wheel"
else
  sdist=$cache/horovod-$version.tar.gz
  if [ ! -f "$sdist" ] || ! echo "$sdist_sha256  $sdist" | sha256sum -c --status; then
    say "downloading horovod-$version.tar.gz from PyPI"
    rm -f "$sdist"
    "$py" -m pip download --quiet --no-binary :all: --no-deps --no-build-isolation \
      --dest "$cache" "horovod==$version" >&2
    echo "$sdist_sha256  $sdist" | sha256sum -c --status ||
      { say "$sdist does not have the expected sha256"; exit 1; }
  fi
  "$py" -c 'import setuptools' 2>/dev/null || "$py" -m pip install --quiet setuptools >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cat > "$work/g++-c++20" <<EOF
#!/bin/sh
exec ${CXX:-g++} "\$@" -std=c++20
EOF
  chmod +x "$work/g++-c++20"
  say "building Horovod $version for torch $torch_version ($py_tag, $cuda_seen) on $(nproc) cores"
  build_start=$(date +%s)
  (
    unset HOROVOD_GPU HOROVOD_GPU_OPERATIONS HOROVOD_GPU_ALLREDUCE HOROVOD_GPU_ALLGATHER \
      HOROVOD_GPU_BROADCAST HOROVOD_GPU_ALLTOALL HOROVOD_GPU_REDUCESCATTER \
      HOROVOD_WITHOUT_PYTORCH HOROVOD_WITHOUT_GLOO HOROVOD_WITH_MPI HOROVOD_CPU_OPERATIONS
    export HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 \
      HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1
    jobs=$(nproc)
    export CXX=$work/g++-c++20 MAKEFLAGS=-j$jobs PATH=$venv/bin:$PATH TMPDIR=$work
    "$py" -m pip wheel --no-build-isolation --no-deps --no-cache-dir \
      --wheel-dir "$work/wheel" "$sdist" > "$work/build.log" 2>&1
  ) || { tail -n 40 "$work/build.log" >&2; say "build failed (log above)"; exit 1; }
  built=$(ls "$work"/wheel/horovod-$version-*.whl)
  mv "$built" "$wheel_dir/"
  wheel=$wheel_dir/$(basename "$built")
  say "built $wheel in $(($(date +%s) - build_start)) s"
fi

# A Horovod of the same version built for another torch is removed first.
if [ -n "$installed" ] && [ "${installed% *}" != "$version $torch_version" ]; then
  say "replacing the Horovod in $venv ($installed)"
  "$py" -m pip uninstall --quiet --yes horovod >&2
fi
# Horovod's runtime dependencies and the test helpers, from CACHE_DIR when they are there.
extras=(mock pytest-timeout)
if ! "$py" -m pip install --quiet --no-index --find-links "$deps_dir" "$wheel" "${extras[@]}" \
    > /dev/null 2>&1; then
  "$py" -m pip download --quiet --dest "$deps_dir" "$wheel" "${extras[@]}" >&2
  rm -f "$deps_dir"/horovod-*.whl
  "$py" -m pip install --quiet --no-index --find-links "$deps_dir" "$wheel" "${extras[@]}" >&2
fi

"$py" - <<'EOF'
import logging, sys, warnings
logging.disable(logging.WARNING)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import horovod.torch as hvd
mismatch = [str(w.message) for w in caught if "installed with version" in str(w.message)]
assert not mismatch, mismatch
assert hvd.gloo_built(), "Horovod was built without Gloo"
print("horovod-peer: built with: torch, gloo" + "".join(
    ", " + name for name in ("mpi", "nccl", "cuda") if getattr(hvd, name + "_built")()),
    file=sys.stderr)
EOF
say "Horovod $version for torch $torch_version in $venv in $(($(date +%s) - start)) s"
