#!/usr/bin/env bash
# tools/check_includes on a small fixture bridge (layering_fixture/): the clean tree
# passes, and each deliberate violation — an include that runs back up, one that runs
# across to a capability the layer may not use, one to a capability it may use but does
# not depend on — fails, naming the file and the rule.
set -uo pipefail
check=$1
fixture=$(dirname "$2")
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# Runs the check on a copy of the fixture with `file` given `include` added.
# -> exit status in $rc, stderr in $out
run_with() {  # file include
  local tree
  tree=$(mktemp -d "${TEST_TMPDIR:-/tmp}/tree.XXXXXX")
  # -L: under bazel the fixture's files are links into the read-only source tree.
  cp -rL "$fixture"/bridge "$tree"/
  chmod -R u+w "$tree"
  if [ -n "$1" ] && ! echo "#include \"$2\"" >>"$tree/bridge/$1"; then
    fail "could not add the include to $1"
  fi
  out=$("$check" "$tree" "$fixture/layers" "$fixture/deps" 2>&1)
  rc=$?
}

run_with "" ""
[ "$rc" -eq 0 ] || fail "the clean fixture fails: $out"

expect_violation() {  # file include message
  run_with "$1" "$2"
  [ "$rc" -eq 1 ] || fail "$1 including $2: exit $rc, wanted 1"
  grep -qF "bridge/$1 includes $2" <<<"$out" || fail "$1 including $2: the file is not named: $out"
  grep -qF "$3" <<<"$out" || fail "$1 including $2: no \"$3\" in: $out"
}
# Back up: the root includes a capability.
expect_violation core/cache.h bridge/core/exec/exec.h "(core may not use core/exec)"
# Back up from the bottom: base includes the root.
expect_violation base/error.h bridge/core/cache.h "(base may not use core)"
# Across: one capability includes another it may not use.
expect_violation core/code/code.h bridge/core/exec/exec.h "(core/code may not use core/exec)"
# Across without a dependency: api may use core/code, but does not depend on it.
expect_violation api/methods.cc bridge/core/code/code.h "//bridge/api does not depend on //bridge/core/code"
# A header in no layer.
expect_violation api/methods.cc bridge/tools/x.h "in no layer"

# A package left out of the layers: its files would go unchecked.
tree=$(mktemp -d "${TEST_TMPDIR:-/tmp}/tree.XXXXXX")
cp -rL "$fixture"/bridge "$tree"/
chmod -R u+w "$tree"
mkdir -p "$tree"/bridge/core/network
printf '#include "bridge/api/methods.h"\n' >"$tree"/bridge/core/network/net.h
out=$("$check" "$tree" "$fixture/layers" "$fixture/deps" 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "an unlisted package: exit $rc, wanted 1"
grep -qF "bridge/core/network has sources but is no layer" <<<"$out" || fail "an unlisted package is not named: $out"

# Any spacing of the directive is read.
printf '#  include "bridge/core/exec/exec.h"\n' >"$tree"/bridge/core/spaced.h
rm -r "$tree"/bridge/core/network
out=$("$check" "$tree" "$fixture/layers" "$fixture/deps" 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "a spaced include: exit $rc, wanted 1"
grep -qF "bridge/core/spaced.h includes bridge/core/exec/exec.h (core may not use core/exec)" <<<"$out" ||
  fail "a spaced include is not read: $out"

# Within one layer, any include is fine.
run_with core/exec/exec.cc bridge/core/exec/exec.h
[ "$rc" -eq 0 ] || fail "an include within core/exec fails: $out"

[ "$failures" -eq 0 ] && echo "layering_test: ok"
exit $((failures > 0))
