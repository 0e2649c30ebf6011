# Shared by the sweeps in this folder; sourced, never run.
# shellcheck shell=bash

# Exits with a message unless the program exists: sweep_need NAME PATH ENV_VAR
sweep_need() {
  [ -x "$2" ] || { echo "$1: no $2 (build first, or set $3)" >&2; exit 1; }
}

# The largest number of a comma list ("2,4,8" -> 8).
sweep_max() {
  local n max=0
  IFS=, read -r -a _list <<<"$1"
  for n in "${_list[@]}"; do [ "$n" -gt "$max" ] && max=$n; done
  echo "$max"
}
