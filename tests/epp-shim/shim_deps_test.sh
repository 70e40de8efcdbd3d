#!/bin/sh
# The shim binary as abx starts it for every command: it loads nothing but the C library
# (nghttp2 and libstdc++ are linked in; README, "It is two programs"), carries no gRPC,
# protobuf or abseil, and stays under its size bound.
#   shim_deps_test.sh [--sanitized] [SHIM]
# --sanitized (a sanitizer build): its runtime is a library of its own and the binary is
# larger; only the symbol check applies.
set -eu
sanitized=0
if [ "${1:-}" = "--sanitized" ]; then
  sanitized=1
  shift
fi
shim=${1:-${TEST_SRCDIR}/${TEST_WORKSPACE}/epp-shim/abx-opensandbox-shim}
# 2.3 MB today; a binary that grows past this has taken in something it should not have.
max_bytes=3145728
fail=0

needed=$(readelf -d "$shim" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ "$sanitized" -eq 0 ] || needed=""
for lib in $needed; do
  case $lib in
    libc.so.6 | ld-linux-*.so.* | libm.so.6) ;;
    *) echo "FAIL: the shim loads $lib (allowed: libc, the dynamic loader, libm)"; fail=1 ;;
  esac
done

# Symbols of the libraries it must not carry (the binary keeps its symbol table).
# (The shim's own gRPC client lives in abx::grpc_protocol, which does not match.)
foreign='^[0-9a-f]* [A-Za-z] (grpc::|grpc_core::|grpc_init|google::protobuf::|absl::)'
found=$(nm -C "$shim" | grep -cE "$foreign" || true)
if [ "$found" -ne 0 ]; then
  echo "FAIL: the shim holds $found symbols of gRPC, protobuf or abseil, e.g.:"
  nm -C "$shim" | grep -E "$foreign" | head -3
  fail=1
fi

size=$(stat -L -c %s "$shim")
if [ "$sanitized" -eq 0 ] && [ "$size" -gt "$max_bytes" ]; then
  echo "FAIL: the shim is $size bytes, over its bound of $max_bytes"
  fail=1
fi

echo "shim: $size bytes (bound $max_bytes); loads: $(echo $needed | tr '\n' ' ')"
exit $fail
