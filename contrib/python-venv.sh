#!/usr/bin/env bash
# Makes (or brings up to date) the Python venv that riseml is built for and tested with:
# torch 2.x and the rest of contrib/python-requirements.txt from PyPI, Debian's python3 as the
# base interpreter, no system site packages (Debian's torch 1.13 must not leak in).
#   contrib/python-venv.sh [VENV] [CACHE]   defaults: build-venv, build-venv.cache
# Downloads are cached in CACHE, so a second run on the same machine costs seconds; a venv whose
# requirements have not changed is left alone. Prints the venv's python path last.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$root/build-venv}
cache=${2:-$venv.cache}
requirements=$root/contrib/python-requirements.txt
stamp=$venv/.riseml-requirements

if [ -x "$venv/bin/python" ] && cmp -s "$requirements" "$stamp"; then
  echo "python-venv: $venv is up to date" >&2
  echo "$venv/bin/python"
  exit 0
fi
start=$(date +%s)
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv"
fi
mkdir -p "$cache"
# The wheels land in CACHE first (pip download skips those already there), then install from
# it alone: a second venv on the same machine needs no network.
"$venv/bin/python" -m pip download --quiet --dest "$cache" -r "$requirements" >&2
"$venv/bin/python" -m pip install --quiet --no-index --find-links "$cache" -r "$requirements" >&2
cp "$requirements" "$stamp"
echo "python-venv: $venv ready in $(($(date +%s) - start)) s ($("$venv/bin/python" -c 'import torch; print("torch", torch.__version__)'))" >&2
echo "$venv/bin/python"
