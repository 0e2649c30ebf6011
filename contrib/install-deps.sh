#!/usr/bin/env bash
# Installs the Debian packages riseml needs to build, test and run its local Slurm testbed.
# Idempotent: packages already present are skipped, so a second run costs a second.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  # libraries
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libhwloc-dev hwloc libpmix-dev libssl-dev
  # tests and benchmarks
  googletest libgtest-dev libgmock-dev libbenchmark-dev valgrind
  # Slurm testbed
  slurm-wlm slurmctld slurmd libslurm-dev munge iproute2 util-linux procps
  # testbed linkcheck (a plain TCP stream between two nodes)
  iperf3
  # benchmark peers
  libopenmpi-dev openmpi-bin libgloo-dev
  # riseml-bench --plot
  python3-matplotlib
  # riseml-replay workloads (model/workloads/generate_workloads.py)
  python3-torchvision
  # Debian packages (contrib/packaging): dpkg-shlibdeps, man pages, lintian
  dpkg-dev help2man lintian
  # python binding
  python3-torch python3-numpy python3-yaml pybind11-dev python3-dev python3-sklearn python3-venv
  # the torch.distributed backend (torch_distributed/): torch 1.13's C++ headers and libraries
  libtorch-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run this script as root (or with sudo) to install them" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Daemons must not start at install time (no systemd here; the testbed starts them itself).
printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
trap 'rm -f /usr/sbin/policy-rc.d' EXIT
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
