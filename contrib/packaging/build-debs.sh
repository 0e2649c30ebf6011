#!/usr/bin/env bash
# Builds the Debian packages riseml, riseml-spank and python3-riseml (contrib/packaging/deb.cmake)
# in a build folder of their own, with Debian's compiler flags (dpkg-buildflags: -O2 -g, stack
# protector, _FORTIFY_SOURCE, relro/now), for the prefix /usr, Debian's python3 and the Slurm
# whose headers are installed (libslurm-dev), without GPU support (the CUDA toolkit is no Debian
# package). Prints the paths of the .deb files, one a line, on the last lines.
#   contrib/packaging/build-debs.sh [BUILD_DIR]      (default: build-deb in the source tree)
# Needs dpkg-dev and help2man (contrib/install-deps.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$root/build-deb}
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
# From the source tree: dpkg-buildflags maps the current folder away (-ffile-prefix-map), so the
# flags, and the build, do not depend on where this was called from.
cd "$root"
jobs=${RISEML_BUILD_JOBS:-$(nproc)}
for tool in dpkg-buildflags dpkg-shlibdeps help2man cpack; do
  if ! command -v "$tool" >/dev/null; then
    echo "build-debs: '$tool' not found: install dpkg-dev and help2man (contrib/install-deps.sh)" >&2
    exit 1
  fi
done
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
cppflags=$(dpkg-buildflags --get CPPFLAGS)
cflags="$(dpkg-buildflags --get CFLAGS) $cppflags"
cxxflags="$(dpkg-buildflags --get CXXFLAGS) $cppflags"
ldflags=$(dpkg-buildflags --get LDFLAGS)
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_INSTALL_PREFIX=/usr \
  -DRISEML_TESTS=OFF -DRISEML_CUDA=OFF -DRISEML_MAN_PAGES=ON -DPYTHON_EXECUTABLE=/usr/bin/python3 \
  "-DCMAKE_C_FLAGS=$cflags" "-DCMAKE_CXX_FLAGS=$cxxflags" "-DCMAKE_EXE_LINKER_FLAGS=$ldflags" \
  "-DCMAKE_SHARED_LINKER_FLAGS=$ldflags" "-DCMAKE_MODULE_LINKER_FLAGS=$ldflags" >/dev/null
cmake --build "$dir" -j "$jobs"
rm -f "$dir"/*.deb
(cd "$dir" && cpack -G DEB)
ls "$dir"/*.deb
