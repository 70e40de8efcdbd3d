# The layer table (tools/layers) and the questions asked of it, for tools/layering and
# tools/check_includes. Sourced, not run.
#
#   read_layers FILE   fills `layers` (in order) and `allowed` (layer -> what it may use)
#   layer_of PATH      a bridge/… path or //bridge/…:label -> its layer (the longest it
#                      sits in), or nothing
#   may_use A B        whether layer A may use layer B (itself always)

declare -A allowed=()
layers=()

read_layers() {
  local line layer
  while IFS= read -r line; do
    line=${line%%#*}
    [[ $line == *:* ]] || continue
    layer=$(echo "${line%%:*}" | xargs)
    allowed[$layer]=$(echo "${line#*:}" | xargs)
    layers+=("$layer")
  done <"$1"
  [ ${#layers[@]} -gt 0 ] || { echo "layering: no layers in $1" >&2; exit 2; }
}

layer_of() {
  local p=${1#//} best="" l
  p=${p%%:*}
  p=${p#bridge/}
  for l in "${layers[@]}"; do
    if [[ $p == "$l" || $p == "$l"/* ]] && [ ${#l} -gt ${#best} ]; then best=$l; fi
  done
  echo "$best"
}

may_use() {
  [ "$1" = "$2" ] && return 0
  local l
  for l in ${allowed[$1]}; do [ "$l" = "$2" ] && return 0; done
  return 1
}
